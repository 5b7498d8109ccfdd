// CUDA graphs (kernels/cuda/runtime.h's CapturedGraph, engine/captured_function.h,
// layers/frozen_graphs.h), on the emulated device (kernels/emu/stream_capture.h) and on a GPU: a
// recording runs nothing until it is replayed, a replay reads the buffers as they are then, what a
// graph cannot hold is refused with the engine left working, and the frozen blocks' forward
// replayed as a graph gives the eager forward's bits in every precision and attention algorithm.
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/captured_function.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "engine/settings.h"
#include "kernels/cuda/runtime.h"
#include "layers/frozen_graphs.h"
#include "layers/vision_transformer.h"

using namespace mcdl;

namespace {

const Device gpu = Device::cuda();

std::vector<float> host_values(const Tensor& t) { return t.to(Device::cpu()).to_vector<float>(); }

// Tensors whose bytes are equal.
bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device::cpu()), y = b.to(Device::cpu());
  return x.shape() == y.shape() && x.dtype() == y.dtype() && std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

// The engine still computes on the device, eagerly, after a refused capture.
void check_engine_works() {
  CHECK_FALSE(cuda::capturing());
  const Tensor x = from_vector<float>({1, 2, 3}, {3}, gpu);
  CHECK(host_values(x * 2.0) == std::vector<float>{2, 4, 6});
}

Tensor random_images(int64_t batch, uint64_t seed) {
  RandomStream stream(seed, 7);
  return rand_normal({batch, 3, 32, 32}, DType::f32, stream, 0.0, 1.0, gpu);
}

// A ViT with two frozen blocks in front of a trained one, on the device; with LayerScale, DINOv2's
// registers and a position table learnt at another size (resized to the input, as DINOv2's is).
// Heads of 16, or of 64 with `heads_of_64` (the size the wgmma attention takes).
VisionTransformer frozen_prefix_model(bool layer_scale, bool heads_of_64 = false) {
  VisionTransformer model(parse_model_config(std::string("img=32,patch=8,depth=3,chans=3,") +
                                             (heads_of_64 ? "dim=128,heads=2" : "dim=64,heads=4") +
                                             (layer_scale ? ",layer_scale=true,registers=2,pos_img=48" : ""))
                              .backbone);
  model.initialize(11);
  model.set_grad_from_block(2);
  model.to(gpu);
  return model;
}

// Three frozen forwards of one batch: eager, recorded, replayed.
void record_and_replay(VisionTransformer& model, const Tensor& images) {
  for (int call = 0; call < 3; ++call) (void)model.forward_frozen(images);
  REQUIRE(model.frozen_graphs().replays() == 1);
}

}  // namespace

TEST_CASE("CUDA graphs: a recording runs when replayed, on the buffers' contents at that time") {
  Tensor x = from_vector<float>({1, 2, 3}, {3}, gpu), y = zeros({3}, DType::f32, gpu);
  const auto graph = cuda::CapturedGraph::capture([&] {
    const Tensor doubled = x * 2.0 + 1.0;  // intermediates the graph allocates and frees
    cuda::copy_device_to_device(y.raw_data(), doubled.raw_data(), doubled.nbytes());
  });
  CHECK_FALSE(cuda::capturing());
  CHECK(host_values(y) == std::vector<float>{0, 0, 0});  // recorded, not run
  graph->replay();
  CHECK(host_values(y) == std::vector<float>{3, 5, 7});
  const std::vector<float> next = {-1, 0, 10};
  cuda::copy_host_to_device(x.raw_data(), next.data(), next.size() * sizeof(float));
  graph->replay();
  graph->replay();
  CHECK(host_values(y) == std::vector<float>{-1, 1, 21});
}

TEST_CASE("CUDA graphs: what a graph cannot hold is refused, and the engine goes on eagerly") {
  const Tensor x = from_vector<float>({1, 2, 3}, {3}, gpu);
  SUBCASE("a read-back") {
    CHECK_THROWS_AS(cuda::CapturedGraph::capture([&] { (void)host_values(x * 2.0); }), cuda::CaptureError);
  }
  SUBCASE("an upload from host memory") {
    CHECK_THROWS_AS(cuda::CapturedGraph::capture([&] { (void)from_vector<float>({4, 5}, {2}, gpu); }),
                    cuda::CaptureError);
  }
  SUBCASE("a wait for the device") {
    CHECK_THROWS_AS(cuda::CapturedGraph::capture([] { cuda::synchronize(); }), cuda::CaptureError);
  }
  SUBCASE("the free of memory allocated before the capture") {
    Tensor older = x * 3.0;
    CHECK_THROWS_WITH_AS(cuda::CapturedGraph::capture([&] { older = Tensor(); }),
                         doctest::Contains("allocated before the capture was freed during it"), cuda::CaptureError);
  }
  SUBCASE("an error of the work itself is rethrown as it was") {
    CHECK_THROWS_WITH_AS(cuda::CapturedGraph::capture([&] {
                           const Tensor t = x * 2.0;
                           throw std::invalid_argument("the work's own error");
                         }),
                         "the work's own error", std::invalid_argument);
  }
  check_engine_works();
}

TEST_CASE("CUDA graphs: a capture that keeps device memory is a logic error (a cache filled while recording)") {
  // On a GPU the kept pointer would be one that no launch ever mapped.
  if (cuda::device_description().find("emulator") == std::string::npos) return;
  const Tensor x = from_vector<float>({1, 2, 3}, {3}, gpu);
  Tensor kept;
  CHECK_THROWS_WITH_AS(cuda::CapturedGraph::capture([&] { kept = x * 2.0; }),
                       doctest::Contains("outlived it"), std::logic_error);
  kept = Tensor();
  check_engine_works();
}

TEST_CASE("CUDA graphs: CapturedFunction returns what the function returns, call after call") {
  const auto f = [](const Tensor& t) { return softmax(t * 0.5); };
  const Tensor first = random_images(2, 1);
  const Tensor eager_first = f(first);
  CapturedFunction captured(f, first, eager_first);
  for (uint64_t seed : {1, 2, 3}) {
    CAPTURE(seed);
    const Tensor input = random_images(2, seed);
    const Tensor out = captured(input);
    CHECK(same_bits(out, f(input)));
  }
  CHECK_THROWS_WITH_AS(captured(random_images(3, 1)), doctest::Contains("recorded for"), Error);
}

namespace {

struct FrozenReplayCase {
  MatmulPrecision precision;
  AttentionAlgorithm attention;
  bool layer_scale;
  Bf16Gelu gelu = Bf16Gelu::erf;
};

// The frozen blocks of a small model (heads of 64 for the wgmma attention), eager and then as
// graphs: recorded on a shape's second call, replayed from its third, the eager bits every time.
void check_frozen_replay(const FrozenReplayCase& c) {
  CAPTURE(static_cast<int>(c.precision));
  CAPTURE(std::string(attention_algorithm_name(c.attention)));
  CAPTURE(c.layer_scale);
  CAPTURE(std::string(bf16_gelu_name(c.gelu)));
  const ScopedEngineSettings precision(&EngineSettings::matmul_precision, c.precision);
  const ScopedEngineSettings attention(&EngineSettings::attention, c.attention);
  const ScopedEngineSettings gelu(&EngineSettings::bf16_gelu, c.gelu);
  VisionTransformer model = frozen_prefix_model(c.layer_scale, c.attention == AttentionAlgorithm::wgmma);
  REQUIRE(model.frozen_depth() == 2);
  const std::vector<Tensor> batches = {random_images(4, 1), random_images(4, 2), random_images(4, 3),
                                       random_images(4, 1), random_images(2, 4)};
  std::vector<Tensor> eager;
  for (const Tensor& images : batches) eager.push_back(model.forward_frozen(images));
  CHECK(model.frozen_graphs().recordings() == 0);  // off by default

  const ScopedEngineSettings graphs(&EngineSettings::cuda_graphs, CudaGraphs::frozen);
  std::vector<int64_t> recordings, replays;
  for (size_t i = 0; i < batches.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(model.forward_frozen(batches[i]), eager[i]));
    recordings.push_back(model.frozen_graphs().recordings());
    replays.push_back(model.frozen_graphs().replays());
  }
  // Batch 4 of 4 images: eager, then recorded, then replayed; the batch of 2 is new, so eager.
  CHECK(recordings == std::vector<int64_t>{0, 1, 1, 1, 1});
  CHECK(replays == std::vector<int64_t>{0, 0, 1, 2, 2});
  // The whole forward through the replayed prefix equals the eager one too.
  CHECK(same_bits(model.forward(batches[2]), model.forward_from_frozen(eager[2])));
}

}  // namespace

TEST_CASE("CUDA graphs: the frozen blocks replayed as graphs give the eager forward's bits") {
  for (const FrozenReplayCase& c :
       {FrozenReplayCase{MatmulPrecision::fp32, AttentionAlgorithm::fused, false},
        FrozenReplayCase{MatmulPrecision::bf16, AttentionAlgorithm::fused, false},
        FrozenReplayCase{MatmulPrecision::bf16, AttentionAlgorithm::flash, true},
        FrozenReplayCase{MatmulPrecision::bf16, AttentionAlgorithm::unfused, false, Bf16Gelu::tanh},
        FrozenReplayCase{MatmulPrecision::bf16, AttentionAlgorithm::cudnn, false, Bf16Gelu::cudnn}})
    check_frozen_replay(c);
}

// A test case of its own, so that tools/gpu_check.sh runs every wgmma case in its own process.
TEST_CASE("CUDA graphs: the frozen blocks with the wgmma attention replayed as graphs give the eager bits") {
  check_frozen_replay({MatmulPrecision::bf16, AttentionAlgorithm::wgmma, false});
}
TEST_CASE("CUDA graphs: a frozen weight written since the recording is never replayed stale") {
  const ScopedEngineSettings precision(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
  const ScopedEngineSettings graphs(&EngineSettings::cuda_graphs, CudaGraphs::frozen);
  VisionTransformer model = frozen_prefix_model(false);
  const Tensor images = random_images(4, 5);
  record_and_replay(model, images);
  // A load writes the weight in place (its storage's write count moves; the bf16 copy is made again).
  Tensor& weight = model.blocks[0].mlp.fc1.weight;
  const Tensor changed = weight * 1.5;
  cuda::copy_device_to_device(weight.raw_data(), changed.raw_data(), changed.nbytes());
  const Tensor after = model.forward_frozen(images);
  CHECK(model.frozen_graphs().replays() == 1);
  const ScopedEngineSettings eager(&EngineSettings::cuda_graphs, CudaGraphs::off);
  CHECK(same_bits(after, model.forward_frozen(images)));
  CHECK_FALSE(same_bits(after, model.forward_frozen(random_images(4, 6))));
}

TEST_CASE("CUDA graphs: weights moved to new storages are recorded again, never replayed from the old") {
  const ScopedEngineSettings precision(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
  const ScopedEngineSettings graphs(&EngineSettings::cuda_graphs, CudaGraphs::frozen);
  VisionTransformer model = frozen_prefix_model(false);
  const Tensor images = random_images(4, 5);
  record_and_replay(model, images);
  // The device storages are freed and made again (the key holds each storage as an object, so even
  // a new one at a freed one's address is not taken for it).
  model.to(Device::cpu());
  model.to(gpu);
  (void)model.forward_frozen(images);
  CHECK(model.frozen_graphs().replays() == 1);
  (void)model.forward_frozen(images);  // recorded again for the new storages
  CHECK(model.frozen_graphs().recordings() == 2);
}

TEST_CASE("CUDA graphs: a forward that cannot be recorded runs eagerly from then on") {
  const ScopedEngineSettings graphs(&EngineSettings::cuda_graphs, CudaGraphs::frozen);
  int64_t read_backs = 0;
  // A forward that reads a value back on the host: no graph can hold that.
  const auto reads_back = [&](const Tensor& x) {
    ++read_backs;
    const float first = host_values(x)[0];
    return x * static_cast<double>(first);
  };
  FrozenGraphs graphs_of_model;
  const Tensor x = from_vector<float>({2, 3}, {2}, gpu);
  for (int call = 0; call < 4; ++call) CHECK(host_values(graphs_of_model.run(x, {}, reads_back)) == std::vector<float>{4, 6});
  CHECK(read_backs == 5);  // four eager calls and the one attempt to record
  CHECK(graphs_of_model.recordings() == 0);
  CHECK(graphs_of_model.replays() == 0);
  check_engine_works();
  // The tools' console line counts the refusal (with the process's other tests' counts).
  const std::string line = FrozenGraphs::process_summary();
  CHECK(line.rfind("CUDA graphs of the frozen blocks: " + std::to_string(FrozenGraphs::process_recordings()) +
                       " recorded, " + std::to_string(FrozenGraphs::process_replays()) + " replayed, ",
                   0) == 0);
  const int64_t refused = FrozenGraphs::process_refusals();
  CHECK(refused >= 1);
  CHECK(line.ends_with(", " + std::to_string(refused) + (refused == 1 ? " recording" : " recordings") + " refused"));
}

TEST_CASE("CUDA graphs: the last four shapes keep their graphs; an older one is recorded again") {
  const ScopedEngineSettings graphs(&EngineSettings::cuda_graphs, CudaGraphs::frozen);
  FrozenGraphs kept;
  const auto doubled = [](const Tensor& x) { return x * 2.0; };
  auto call = [&](int64_t n) {
    const Tensor x = full({n}, static_cast<double>(n), DType::f32, gpu);
    CHECK(host_values(kept.run(x, {}, doubled)) == std::vector<float>(static_cast<size_t>(n), 2.0f * n));
  };
  for (int64_t n = 1; n <= 6; ++n)
    for (int repeat = 0; repeat < 3; ++repeat) call(n);  // eager, recorded, replayed
  CHECK(kept.recordings() == 6);
  CHECK(kept.replays() == 6);
  call(3);  // among the last four: replayed
  CHECK(kept.replays() == 7);
  call(1);  // its graph went when shape 5's came: recorded again (shape 4's goes)
  CHECK(kept.recordings() == 7);
  CHECK(kept.replays() == 7);
  call(4);
  CHECK(kept.recordings() == 8);
  call(1);
  CHECK(kept.replays() == 8);
  // Counted for the process too, for the tools' console line.
  const int64_t recordings = FrozenGraphs::process_recordings(), replays = FrozenGraphs::process_replays();
  call(2);  // recorded again (shape 6's goes)
  call(2);  // replayed
  CHECK(FrozenGraphs::process_recordings() == recordings + 1);
  CHECK(FrozenGraphs::process_replays() == replays + 1);
  CHECK(FrozenGraphs::process_summary().rfind("CUDA graphs of the frozen blocks: " + std::to_string(recordings + 1) +
                                                  " recorded, " + std::to_string(replays + 1) + " replayed",
                                              0) == 0);
}
