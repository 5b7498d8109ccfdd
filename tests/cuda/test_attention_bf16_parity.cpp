// bf16_attention (engine/ops/inference.h) on the CUDA device against the CPU reference: the fused
// tensor-core kernel at several shapes (T not a multiple of 16, one or several steps of 64 keys,
// every head size it takes), the flash and wgmma kernels and cuDNN's fused attention (through the emulated
// cuDNN, or the real one in the GPU binary), the unfused path when selected, and the unfused
// fallback for head sizes the fused kernel does not take. Which path ran is read from the profiler
// ranges.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/ops.h"
#include "kernels/cuda/bf16_inference.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/cudnn_backend.h"
#include "kernels/emu/profile_ranges.h"
#include "kernels/emu/runtime_api.h"
#include "tests/bf16_support.h"
#include "tests/cuda/cudnn_support.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

Tensor attention(const Tensor& qkv, int64_t heads) { return bf16_attention(qkv.to(DType::bf16), heads).to(DType::f32); }

// qkv [B, T, 3·H·hd] with values in [-2, 2).
Tensor random_qkv(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim, uint64_t seed) {
  return random_tensor({batch, tokens, 3 * heads * head_dim}, seed, -2, 2, DType::f32);
}

// The fused kernel and the CPU reference round the same fp32 numerators exp(s − max) to bf16,
// except that the kernel takes them against the running max of the keys seen so far and rescales
// later, and sums in another order: a numerator may round the other way, 2^-7 of its value at
// most, which moves an output by at most 2^-7 of the largest |v|; then each output rounds once
// (2^-7 relative covers the two roundings apart).
constexpr double fused_atol(double largest_v) { return largest_v / 128; }
constexpr double fused_rtol = 1.0 / 128;

// The unfused path also rounds the scaled scores to bf16 (2^-9 of each) and the normalised
// probabilities: with scores up to about 4 here, a probability moves by up to about 2^-9·8, so
// outputs within 3% of the largest |v|.
constexpr double unfused_tolerance = 3e-2;

// That one bf16_attention on the device runs in the profiler range `path` alone (the fused
// kernel's "attention_bf16" or "attention_bf16_unfused"). Read from the emulator's range log; the
// GPU binary records none, so there only the results are checked.
void check_path(const Tensor& qkv, int64_t heads, const std::string& path) {
  if (emu::emulated_device_count() == 0) return;
  const Tensor device_qkv = qkv.to(DType::bf16).to(Device::cuda());
  const emu::RangeRecording recording;
  const Tensor context = bf16_attention(device_qkv, heads);
  CHECK(recording.names() == std::vector<std::string>{path});
}

struct AttentionCase {
  int64_t batch, tokens, heads, head_dim;
};
// T = 5: a single partial tile of keys and of queries; 17 and 64: one step of 64 keys; 70: a second
// step with 6 keys; 130 and 197: three and four steps, queries past the last token in the last
// warp (197: DINO's ViT-B/16 at 224 px); 257 and 261: DINOv2's ViT-B/14 at 224 px, without and
// with registers, a fifth step of 1 and 5 keys; every head size the fused kernels take.
constexpr AttentionCase kAttentionCases[] = {{2, 5, 2, 32},   {1, 17, 2, 64},  {2, 64, 1, 48},  {2, 70, 1, 48},
                                             {1, 130, 3, 16}, {1, 197, 2, 64}, {1, 257, 1, 64}, {1, 261, 1, 64}};

// T = 5 to 512 at head size 64, the wgmma kernel's: one round of one to four 64-key chunks, each
// partly filled (65: a second chunk with one key) or full (64, 256: no key past the last token);
// then rounds of three chunks and a last of two (257 and 261: DINOv2's ViT-B/14 at 224 px), one
// (385) or two (512).
constexpr AttentionCase kWgmmaCases[] = {{2, 5, 2, 64},   {1, 64, 2, 64},  {1, 65, 1, 64},  {2, 130, 1, 64},
                                         {1, 197, 3, 64}, {1, 256, 1, 64}, {1, 257, 1, 64}, {1, 261, 2, 64},
                                         {1, 385, 1, 64}, {1, 512, 1, 64}};

// The selected fused kernel (profiler range `path`) against the CPU reference at every case, then
// with rising scores: tokens scaled from 0.5 up to 3, so later keys give larger scores and every
// step of 64 keys (round of keys, for wgmma) rescales what the earlier ones accumulated.
template <size_t N = std::size(kAttentionCases)>
void check_fused_kernel(const std::string& label, const std::string& path, uint64_t seed,
                        const AttentionCase (&cases)[N] = kAttentionCases, int64_t rising_head_dim = 32,
                        int64_t rising_tokens = 197) {
  for (const AttentionCase& c : cases) {
    const std::string name = label + " bf16_attention B=" + std::to_string(c.batch) + " T=" + std::to_string(c.tokens) +
                             " H=" + std::to_string(c.heads) + " hd=" + std::to_string(c.head_dim);
    const Tensor qkv = random_qkv(c.batch, c.tokens, c.heads, c.head_dim, ++seed);
    check_path(qkv, c.heads, path);
    check_cuda_forward_parity(name, [&](auto& x) { return attention(x[0], c.heads); }, {qkv}, fused_atol(2),
                              fused_rtol);
  }
  const int64_t tokens = rising_tokens;
  std::vector<float> ramp;
  for (int64_t t = 0; t < tokens; ++t) ramp.push_back(0.5f + 2.5f * static_cast<float>(t) / (tokens - 1));
  check_cuda_forward_parity(label + " bf16_attention, rising scores", [](auto& x) { return attention(x[0] * x[1], 2); },
                            {random_qkv(2, tokens, 2, rising_head_dim, ++seed), from_vector(ramp, {1, tokens, 1})},
                            fused_atol(6),
                            fused_rtol);
}

}  // namespace

TEST_CASE("cuda parity: fused bf16 attention (WMMA) at T = 5 to 261, head sizes 16 to 64, rising scores") {
  if (!testing::cpu_runs_bf16_products()) return;
  check_fused_kernel("fused", "attention_bf16", 100);
}

TEST_CASE("cuda parity: flash bf16 attention (mma.sync, softmax in registers) at T = 5 to 261, head sizes 16 to 64") {
  if (!testing::cpu_runs_bf16_products()) return;
  const ScopedEngineSettings flash(&EngineSettings::attention, AttentionAlgorithm::flash);
  check_fused_kernel("flash", "attention_bf16_flash", 200);
  // Head size 8 falls back to the unfused path, as with the fused kernel.
  check_path(random_qkv(1, 9, 2, 8, 9), 2, "attention_bf16_unfused");
}

TEST_CASE("cuda parity: wgmma bf16 attention (Hopper's warpgroup products) at head size 64, T = 5 to 512") {
  if (!testing::cpu_runs_bf16_products()) return;
  const ScopedEngineSettings wgmma(&EngineSettings::attention, AttentionAlgorithm::wgmma);
  check_fused_kernel("wgmma", "attention_bf16_wgmma", 250, kWgmmaCases, 64, 400);
  // What it does not take runs the fused kernel: another head size, more than 512 tokens.
  check_path(random_qkv(1, 17, 2, 32, 9), 2, "attention_bf16");
  check_path(random_qkv(1, 513, 1, 64, 10), 1, "attention_bf16");
}

namespace {

// The attention of the CPU reference's roundings without its bf16 products (which need oneDNN,
// and so AVX-512): fp32 scores and softmax, numerators rounded to bf16 for the product with v,
// divided by the sum of the unrounded numerators. qkv [B, T, 3·H·hd] already bf16-valued.
std::vector<float> host_attention(const Tensor& qkv, int64_t heads) {
  const std::vector<float> x = qkv.to_vector<float>();
  const int64_t b_count = qkv.size(0), t_count = qkv.size(1), d = qkv.size(2) / 3, hd = d / heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  std::vector<float> out(static_cast<size_t>(b_count * t_count * d));
  const auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h, int64_t e) {
    return x[static_cast<size_t>((b * t_count + t) * 3 * d + part * d + h * hd + e)];
  };
  for (int64_t b = 0; b < b_count; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < t_count; ++i) {
        std::vector<float> scores(static_cast<size_t>(t_count));
        float top = -INFINITY;
        for (int64_t j = 0; j < t_count; ++j) {
          float s = 0;
          for (int64_t e = 0; e < hd; ++e) s += at(b, i, 0, h, e) * at(b, j, 1, h, e);
          scores[static_cast<size_t>(j)] = s * scale;
          top = std::max(top, s * scale);
        }
        float sum = 0;
        std::vector<float> numerators(static_cast<size_t>(t_count));
        for (int64_t j = 0; j < t_count; ++j) {
          const float p = std::exp(scores[static_cast<size_t>(j)] - top);
          sum += p;
          numerators[static_cast<size_t>(j)] = static_cast<float>(bf16(p));
        }
        for (int64_t e = 0; e < hd; ++e) {
          float o = 0;
          for (int64_t j = 0; j < t_count; ++j) o += numerators[static_cast<size_t>(j)] * at(b, j, 2, h, e);
          out[static_cast<size_t>((b * t_count + i) * d + h * hd + e)] = static_cast<float>(bf16(o / sum));
        }
      }
  return out;
}

// The selected algorithm's bf16_attention of qkv (bf16-valued f32) against host_attention: the
// largest excess of an element's error over the fused kernels' tolerance (at most 0 passes).
double excess_over_host(const Tensor& qkv, int64_t heads) {
  const std::vector<float> expected = host_attention(qkv, heads);
  const std::vector<float> got =
      bf16_attention(qkv.to(DType::bf16).to(Device::cuda()), heads).to(DType::f32).to_vector<float>();
  REQUIRE(got.size() == expected.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - expected[i]) - (fused_atol(2) + fused_rtol * std::abs(expected[i])));
  return worst;
}

}  // namespace

TEST_CASE("bf16 attention: the flash, fused and wgmma kernels and cuDNN's against a host reference without oneDNN") {
  uint64_t seed = 300;
  for (const AttentionCase& c : kAttentionCases)
    for (AttentionAlgorithm algorithm : {AttentionAlgorithm::flash, AttentionAlgorithm::fused, AttentionAlgorithm::cudnn,
                                         AttentionAlgorithm::wgmma}) {
      CAPTURE(c.tokens);
      CAPTURE(c.head_dim);
      CAPTURE(static_cast<int>(algorithm));
      const ScopedEngineSettings scope(&EngineSettings::attention, algorithm);
      const Tensor qkv = random_qkv(c.batch, c.tokens, c.heads, c.head_dim, ++seed).to(DType::bf16).to(DType::f32);
      CHECK(excess_over_host(qkv, c.heads) <= 0);
    }
}

// A batch runs as chunks of 1, 2, 4, ... 128 entries, each with its plan: MixMatch's changing
// sizes reuse at most eight plans per shape. The chunks land at their own entries: seven entries
// (4 + 2 + 1) against the host reference, each entry's numbers its own.
TEST_CASE("cuDNN's attention runs a batch as chunks of planned sizes, largest first") {
  using Chunks = std::vector<int64_t>;
  CHECK(cuda::cudnn_batch_chunks(0).empty());
  CHECK(cuda::cudnn_batch_chunks(1) == Chunks{1});
  CHECK(cuda::cudnn_batch_chunks(108) == Chunks{64, 32, 8, 4});
  CHECK(cuda::cudnn_batch_chunks(128) == Chunks{128});
  CHECK(cuda::cudnn_batch_chunks(300) == Chunks{128, 128, 32, 8, 4});
  const ScopedEngineSettings scope(&EngineSettings::attention, AttentionAlgorithm::cudnn);
  const Tensor qkv = random_qkv(7, 17, 2, 32, 70).to(DType::bf16).to(DType::f32);
  check_path(qkv, 2, "attention_bf16_cudnn");
  CHECK(excess_over_host(qkv, 2) <= 0);
}

TEST_CASE("cuda parity: unfused bf16 attention, selected or as the fallback for other head sizes") {
  if (!testing::cpu_runs_bf16_products()) return;
  {
    const ScopedEngineSettings unfused(&EngineSettings::attention, AttentionAlgorithm::unfused);
    const Tensor qkv = random_qkv(2, 17, 3, 16, 30);
    check_path(qkv, 3, "attention_bf16_unfused");
    check_cuda_forward_parity("unfused bf16_attention", [](auto& x) { return attention(x[0], 3); }, {qkv},
                              unfused_tolerance, unfused_tolerance);
  }
  // Head size 8: not one the fused kernel takes.
  const Tensor qkv = random_qkv(2, 19, 3, 8, 31);
  check_path(qkv, 3, "attention_bf16_unfused");
  check_cuda_forward_parity("bf16_attention hd=8", [](auto& x) { return attention(x[0], 3); }, {qkv},
                            unfused_tolerance, unfused_tolerance);
}

TEST_CASE("the fused attention kernels refuse head sizes and buffers they do not take") {
  const Tensor qkv = random_qkv(1, 5, 2, 64, 40).to(DType::bf16).to(Device::cuda());
  Tensor context = empty({1, 5, 128}, DType::bf16, Device::cuda());
  for (int64_t head_dim : {8, 80, 128}) CHECK_FALSE(cuda::attention_bf16_fuses(qkv.ptr<bf16>(), context.ptr<bf16>(), head_dim));
  CHECK(cuda::attention_bf16_fuses(qkv.ptr<bf16>(), context.ptr<bf16>(), 64));
  CHECK_FALSE(cuda::attention_bf16_fuses(qkv.ptr<bf16>() + 1, context.ptr<bf16>(), 64));
  CHECK_THROWS_WITH_AS(cuda::attention_bf16(qkv.ptr<bf16>(), context.ptr<bf16>(), 1, 5, 1, 128, 0.1f),
                       doctest::Contains("takes a head size of 16, 32, 48 or 64 and 16-byte aligned buffers, got "
                                         "head_dim 128"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cuda::attention_bf16_flash(qkv.ptr<bf16>(), context.ptr<bf16>(), 1, 5, 1, 128, 0.1f),
                       doctest::Contains("attention_bf16_flash: takes a head size of 16, 32, 48 or 64"),
                       std::invalid_argument);
}

// cuDNN's attention takes every case above (its plan built through the emulated cuDNN, or the
// real one on a GPU, where a refusal would otherwise pass unseen: bf16_attention falls back to the
// fused kernel), and bf16_attention runs it, in the profiler range "attention_bf16_cudnn" alone.
TEST_CASE("cuDNN's fused attention: a plan for every case, and bf16_attention runs it") {
  bool every = true;
  for (const AttentionCase& c : kAttentionCases) {
    const Tensor qkv = random_qkv(c.batch, c.tokens, c.heads, c.head_dim, 50).to(DType::bf16).to(Device::cuda());
    const Tensor context = empty({c.batch, c.tokens, c.heads * c.head_dim}, DType::bf16, Device::cuda());
    std::string why;
    const bool supported = cuda::attention_bf16_cudnn_supported(qkv.ptr<bf16>(), context.ptr<bf16>(), c.batch,
                                                                c.tokens, c.heads, c.head_dim, &why);
    CHECK_MESSAGE(supported, why);
    every = every && supported;
  }
  if (every) MESSAGE(cuda::cudnn_description());
  const ScopedEngineSettings cudnn(&EngineSettings::attention, AttentionAlgorithm::cudnn);
  check_path(random_qkv(1, 17, 2, 64, 51), 2, "attention_bf16_cudnn");
}

TEST_CASE("cuDNN's attention: the sizes it refuses, a missing library, and the fused kernel instead") {
  const Tensor qkv = random_qkv(1, 5, 2, 64, 60).to(DType::bf16).to(Device::cuda());
  Tensor context = empty({1, 5, 128}, DType::bf16, Device::cuda());
  std::string why;
  CHECK_FALSE(cuda::attention_bf16_cudnn_supported(qkv.ptr<bf16>(), context.ptr<bf16>(), 1, 5, 2, 12, &why));
  CHECK(why.find("a multiple of 8") != std::string::npos);
  CHECK_FALSE(cuda::attention_bf16_cudnn_supported(qkv.ptr<bf16>() + 1, context.ptr<bf16>(), 1, 5, 2, 64, &why));
  CHECK(why.find("16-byte aligned") != std::string::npos);
  CHECK_THROWS_WITH_AS(cuda::attention_bf16_cudnn(qkv.ptr<bf16>(), context.ptr<bf16>(), 1, 5, 2, 12, 0.1f),
                       doctest::Contains("a multiple of 8"), std::invalid_argument);
  if (emu::emulated_device_count() == 0) return;  // the rest swaps the emulated library
  const EnvironmentVariable missing("MCDL_CUDNN_LIBRARY", "/nonexistent/libcudnn.so.9");
  // A shape no plan was cached for: the load is tried, and fails with the loader's reason.
  CHECK_FALSE(cuda::attention_bf16_cudnn_supported(qkv.ptr<bf16>(), context.ptr<bf16>(), 1, 5, 1, 128, &why));
  CHECK(why.find("cuDNN could not be loaded") != std::string::npos);
  CHECK(why.find("MCDL_CUDNN_LIBRARY") != std::string::npos);
  const ScopedEngineSettings cudnn(&EngineSettings::attention, AttentionAlgorithm::cudnn);
  check_path(random_qkv(1, 7, 3, 32, 61), 3, "attention_bf16");
}

// The real cuDNN, where one is installed (every machine of this project has cuDNN 9 with the CUDA
// toolkit), accepts the attention's graph: every descriptor, attribute and operation as it checks
// them. And told about a Hopper GPU it has not got, its engines' pattern matchers take the graph,
// its heuristics offer those engines, and the first one's plan compiles its kernels. On an H200
// (cuDNN 9.14) the heuristics offered nothing ("Dropout set of ops not configured correctly"), as
// this check did, with cuDNN 9.14 and 9.19, before the graph computed the softmax statistics as
// cudnn-frontend's does.
TEST_CASE("cuDNN's attention graph: the installed cuDNN finalizes it, and plans it for a Hopper GPU") {
  cuda::check_attention_bf16_cudnn_graph(2, 5, 2, 32);  // the library loaded by default
  if (cuda::cudnn_library().emulated)
    CHECK_THROWS_WITH(cuda::attention_bf16_cudnn_engine_verdicts(2, 5, 2, 32, kHopperDescription),
                      doctest::Contains("descriptor type 38 is not emulated"));
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("left out under AddressSanitizer: the real cuDNN keeps allocations to the process's end");
#else
  const RealCudnn real;
  if (!real.usable) return;
  for (const AttentionCase& c : kAttentionCases)
    CHECK_NOTHROW(cuda::check_attention_bf16_cudnn_graph(c.batch, c.tokens, c.heads, c.head_dim));
  CHECK_NOTHROW(cuda::check_attention_bf16_cudnn_graph(128, 197, 12, 64));
  // ViT-B/16 at 224 px, DINOv2's ViT-B/14 without and with registers, ViT-S/14, the demo's model.
  // Before the graph computed the softmax statistics, neither heuristics mode offered anything.
  for (const AttentionCase& c :
       {AttentionCase{128, 197, 12, 64}, {128, 257, 12, 64}, {128, 261, 12, 64}, {128, 257, 6, 64}, {64, 17, 2, 32}}) {
    INFO("B ", c.batch, " T ", c.tokens, " H ", c.heads, " hd ", c.head_dim);
    check_planned_for_hopper(
        cuda::attention_bf16_cudnn_engine_verdicts(c.batch, c.tokens, c.heads, c.head_dim, kHopperDescription),
        !real.driver.empty());
  }
#endif
}
