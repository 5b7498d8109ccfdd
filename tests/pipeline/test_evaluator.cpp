// The evaluation set's frozen-token cache: in memory, in the mapped file, or recomputed, the
// predictions equal a full forward pass of the test views, epoch after epoch; under bf16
// products the cache keeps the tokens in bf16, bit for bit the same results.
#include <doctest/doctest.h>

#include "data/loader.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "engine/settings.h"
#include "kernels/emu/runtime_api.h"
#include "mcdl/evaluation/evaluation_set.h"
#include "tests/bf16_support.h"

using namespace mcdl;

namespace {

constexpr int kImages = 23;

// kImages random 14×14 grey images of 5 classes.
Dataset random_images() {
  Dataset d;
  d.name = "synthetic";
  d.channels = 1;
  d.num_classes = 5;
  RandomStream stream(4, stream_id("evaluator-images"));
  for (int i = 0; i < kImages; ++i) {
    Image image(14, 14, 1);
    for (auto& p : image.pixels) p = static_cast<uint8_t>(stream.randint(0, 256));
    d.train.push_back({"", i % 5});
    d.train_pixels.push_back(image);
  }
  return d;
}

std::vector<int64_t> every_image() {
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < kImages; ++i) indices.push_back(i);
  return indices;
}

ImageCacheOptions resized_to_16() {
  ImageCacheOptions options;
  options.resize_size = 16;
  return options;
}

// The images, all of them evaluated, and their cache.
struct CachedImages {
  Dataset dataset = random_images();
  std::vector<int64_t> indices = every_image();
  ImageCache cache{dataset, indices, resized_to_16()};
};

// Patches of 7: 1 + 4 tokens of 16 values per image; blocks 0 and 1 frozen.
std::unique_ptr<SimGCDModel> small_model() {
  ModelConfig config = parse_model_config("img=14,patch=7,dim=16,depth=3,heads=2,chans=1");
  config.head = {32, 8, 5};
  auto model = std::make_unique<SimGCDModel>(config);
  model->initialize(1);
  model->set_grad_from_block(2);
  return model;
}

EvaluationOptions small_options(int64_t budget, Device device = Device::cpu()) {
  EvaluationOptions options;
  options.image_size = 14;
  options.normalization = Normalization::grayscale();
  options.batch_size = 5;
  options.workers = 0;
  options.memory_budget_bytes = budget;
  options.device = device;
  return options;
}

}  // namespace

TEST_CASE("evaluator: cached frozen tokens (memory or file) give the predictions of a full forward pass") {
  const CachedImages images;
  const ImageCache& cache = images.cache;
  const std::vector<int64_t>& indices = images.indices;
  const std::unique_ptr<SimGCDModel> model = small_model();

  // The reference: every test view through the whole model.
  std::vector<int64_t> expected;
  for (int64_t i : indices) {
    RandomStream unused(0, 0);
    const Image view = make_view(cache.get(i), ViewKind::test, 14, unused);
    Tensor x = empty({1, 1, 14, 14});
    to_tensor_normalize(view, Normalization::grayscale(), x.data<float>());
    expected.push_back(argmax(model->forward(x).logits, 1).to_vector<int64_t>()[0]);
  }
  for (int64_t budget : {int64_t{1} << 30, int64_t{0}}) {
    INFO("budget ", budget);
    EvaluationSet eval(cache, indices, small_options(budget));
    CHECK(eval.predict(*model) == expected);  // computes and caches
    CHECK(eval.tokens_in_memory() == (budget > 0));
    CHECK(eval.tokens_in_file() == (budget == 0));
    CHECK(eval.predict(*model) == expected);  // from the cache
    const Tensor features = eval.features(model->backbone, true);
    CHECK(features.shape() == Shape{kImages, 16});
  }
  // Nothing frozen (grad_from_block 0): recomputed each time, still the same predictions.
  model->set_grad_from_block(0);
  EvaluationSet eval(cache, indices, small_options(int64_t{2} << 30));
  CHECK(eval.predict(*model) == expected);
  CHECK_FALSE(eval.tokens_in_memory());
  CHECK_FALSE(eval.tokens_in_file());
}

namespace {

// The emulated GPU's memory set to `bytes` until the end of the scope (in the emulated binary; the
// GPU binary keeps its device's).
struct EmulatedDeviceMemory {
  size_t saved = emu::emulated_device_memory();
  explicit EmulatedDeviceMemory(size_t bytes) { emu::emulated_device_memory() = bytes; }
  ~EmulatedDeviceMemory() { emu::emulated_device_memory() = saved; }
};

bool emulated() { return emu::emulated_device_count() > 0; }

}  // namespace

TEST_CASE("evaluator: on a GPU the cached tokens stay in its memory when they take at most a quarter of what is free") {
  const CachedImages images;
  const ImageCache& cache = images.cache;
  const std::vector<int64_t>& indices = images.indices;
  const std::unique_ptr<SimGCDModel> model = small_model();
  model->to(Device::cuda());
  EvaluationSet on_device(cache, indices, small_options(int64_t{1} << 30, Device::cuda()));
  const std::vector<int64_t> computed = on_device.predict(*model);
  CHECK(on_device.tokens_on_device());
  CHECK(on_device.predict(*model) == computed);  // from the device cache
  if (!emulated()) return;
  // A GPU with no memory to spare: the host keeps them, the same predictions.
  const EmulatedDeviceMemory none(0);
  EvaluationSet on_host(cache, indices, small_options(int64_t{1} << 30, Device::cuda()));
  CHECK(on_host.predict(*model) == computed);
  CHECK(on_host.tokens_in_memory());
  CHECK_FALSE(on_host.tokens_on_device());
  CHECK(on_host.predict(*model) == computed);
}

TEST_CASE("evaluator: under bf16 products the cached tokens are bf16: half the bytes, the same results") {
  const CachedImages images;
  const ImageCache& cache = images.cache;
  const std::vector<int64_t>& indices = images.indices;
  // The tokens take 23 · 5 · 16 · 4 = 7,360 bytes in f32, 3,680 in bf16.
  constexpr int64_t budget = 4000;
  const EmulatedDeviceMemory none(0);  // the host's cache on the emulated GPU too
  for (const Device device : {Device::cpu(), Device::cuda()}) {
    if (device.is_cpu() && !testing::cpu_runs_bf16_products()) continue;
    if (device.is_cuda() && !emulated()) continue;  // a real GPU keeps such small tokens in its memory
    INFO(device.str());
    const std::unique_ptr<SimGCDModel> model = small_model();
    model->to(device);
    {  // In f32 the tokens do not fit the budget: the file.
      EvaluationSet eval(cache, indices, small_options(budget, device));
      eval.predict(*model);
      CHECK(eval.tokens_in_file());
    }
    const ScopedEngineSettings bf16(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
    // Computed from the frozen blocks' tokens, then from the cache: the same predictions.
    EvaluationSet eval(cache, indices, small_options(budget, device));
    const std::vector<int64_t> computed = eval.predict(*model);
    CHECK(eval.tokens_in_memory());
    CHECK(eval.predict(*model) == computed);
    // The same features bit for bit, computed and cached.
    EvaluationSet other(cache, indices, small_options(budget, device));
    const std::vector<float> features = other.features(model->backbone, true).to_vector<float>();
    CHECK(other.features(model->backbone, true).to_vector<float>() == features);
    CHECK(eval.features(model->backbone, true).to_vector<float>() == features);
  }
}
