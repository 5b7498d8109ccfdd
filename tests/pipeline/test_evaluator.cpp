// The evaluation set's frozen-token cache: in memory, in the mapped file, or recomputed, the
// predictions equal a full forward pass of the test views, epoch after epoch.
#include <doctest/doctest.h>

#include "data/loader.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "mcdl/evaluation/evaluation_set.h"

using namespace mcdl;

TEST_CASE("evaluator: cached frozen tokens (memory or file) give the predictions of a full forward pass") {
  Dataset d;
  d.name = "synthetic";
  d.channels = 1;
  d.num_classes = 5;
  RandomStream stream(4, stream_id("evaluator-images"));
  for (int i = 0; i < 23; ++i) {
    Image image(14, 14, 1);
    for (auto& p : image.pixels) p = static_cast<uint8_t>(stream.randint(0, 256));
    d.train.push_back({"", i % 5});
    d.train_pixels.push_back(image);
  }
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < 23; ++i) indices.push_back(i);
  ImageCacheOptions cache_options;
  cache_options.resize_size = 16;
  const ImageCache cache(d, indices, cache_options);

  ModelConfig config = parse_model_config("img=14,patch=7,dim=16,depth=3,heads=2,chans=1");
  config.head = {32, 8, 5};
  SimGCDModel model(config);
  model.initialize(1);
  model.set_grad_from_block(2);

  // The reference: every test view through the whole model.
  std::vector<int64_t> expected;
  for (int64_t i : indices) {
    RandomStream unused(0, 0);
    const Image view = make_view(cache.get(i), ViewKind::test, 14, unused);
    Tensor x = empty({1, 1, 14, 14});
    to_tensor_normalize(view, Normalization::grayscale(), x.data<float>());
    expected.push_back(argmax(model.forward(x).logits, 1).to_vector<int64_t>()[0]);
  }
  for (int64_t budget : {int64_t{1} << 30, int64_t{0}}) {
    INFO("budget ", budget);
    EvaluationOptions options;
    options.image_size = 14;
    options.normalization = Normalization::grayscale();
    options.batch_size = 5;
    options.workers = 0;
    options.memory_budget_bytes = budget;
    EvaluationSet eval(cache, indices, options);
    CHECK(eval.predict(model) == expected);  // computes and caches
    CHECK(eval.tokens_in_memory() == (budget > 0));
    CHECK(eval.tokens_in_file() == (budget == 0));
    CHECK(eval.predict(model) == expected);  // from the cache
    const Tensor features = eval.features(model.backbone, true);
    CHECK(features.shape() == Shape{23, 16});
  }
  // Nothing frozen (grad_from_block 0): recomputed each time, still the same predictions.
  model.set_grad_from_block(0);
  EvaluationOptions options;
  options.image_size = 14;
  options.normalization = Normalization::grayscale();
  options.workers = 0;
  EvaluationSet eval(cache, indices, options);
  CHECK(eval.predict(model) == expected);
  CHECK_FALSE(eval.tokens_in_memory());
  CHECK_FALSE(eval.tokens_in_file());
}
