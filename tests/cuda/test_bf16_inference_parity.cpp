// The frozen blocks' bf16 inference path (engine/ops/inference.h): each op on the CUDA device
// (emulated, or real in mcdl_tests_gpu) against the CPU reference (the attention's in
// test_attention_bf16_parity.cpp), and each against its f32 op within bf16's rounding; then a ViT
// whose frozen blocks run in bf16 against the f32 model.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "kernels/cuda/gemm.h"
#include "kernels/emu/profile_ranges.h"
#include "kernels/emu/runtime_api.h"
#include "layers/simgcd_model.h"
#include "tests/bf16_support.h"
#include "tests/cuda/cudnn_support.h"
#include "tests/cuda/parity.h"
#include "tests/layers/vit_test_util.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

Tensor as_bf16(const Tensor& x) { return x.to(DType::bf16); }
Tensor random_f32(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return random_tensor(shape, seed, low, high, DType::f32);
}
Tensor as_f32(const Tensor& x) { return x.to(DType::f32); }

// Device against host: the same bf16 inputs, fp32 math in a different order (warp sums, cuBLAS's
// accumulation), then one rounding to bf16 each: at most a unit or two in bf16's last place.
constexpr double device_tolerance = 1.6e-2;

}  // namespace

TEST_CASE("cuda parity: bf16 layer norm, rows in registers (up to 1,024 elements, a multiple of 8) or not") {
  // 768 and 384: three and one and a half packs of eight per lane; 1,024: four; 1,004 and 2,048
  // take the element-wise kernel. The CPU reference needs no bf16 product, so this runs anywhere.
  uint64_t seed = 40;
  for (int64_t d : {768, 384, 1024, 1004, 2048}) {
    seed += 3;
    check_cuda_forward_parity(
        "bf16_layer_norm d=" + std::to_string(d),
        [](auto& x) { return as_f32(bf16_layer_norm(as_bf16(x[0]), x[1], x[2], 1e-6)); },
        {random_f32({37, d}, seed, -3, 5), random_f32({d}, seed + 1), random_f32({d}, seed + 2)}, device_tolerance,
        device_tolerance);
  }
}

TEST_CASE("cuda parity: bf16 layer norm, gelu and linear (with and without the residual)") {
  if (!testing::cpu_runs_bf16_products()) return;
  check_cuda_forward_parity(
      "bf16_layer_norm",
      [](auto& x) { return as_f32(bf16_layer_norm(as_bf16(x[0]), x[1], x[2], 1e-6)); },
      {random_f32({37, 768}, 1, -3, 5), random_f32({768}, 2), random_f32({768}, 3)}, device_tolerance,
      device_tolerance);
  // 5000 elements go in packs of eight; 999 leave a tail of seven.
  for (int64_t n : {1000, 999})
    check_cuda_forward_parity("bf16_gelu", [](auto& x) { return as_f32(bf16_gelu(as_bf16(x[0]))); },
                              {random_f32({5, n}, 4, -4, 4)}, device_tolerance, device_tolerance);
  check_cuda_forward_parity(
      "bf16_linear", [](auto& x) { return as_f32(bf16_linear(as_bf16(x[0]), x[1], x[2])); },
      {random_f32({2, 9, 64}, 5), random_f32({48, 64}, 6, -0.2, 0.2), random_f32({48}, 7)},
      device_tolerance, device_tolerance);
  check_cuda_forward_parity(
      "bf16_linear with residual",
      [](auto& x) { return as_f32(bf16_linear(as_bf16(x[0]), x[1], x[2], as_bf16(x[3]))); },
      {random_f32({2, 9, 64}, 8), random_f32({48, 64}, 9, -0.2, 0.2), random_f32({48}, 10),
       random_f32({2, 9, 48}, 11, -4, 4)},
      device_tolerance, device_tolerance);
  // erf: the CPU applies the GELU to the fp32 sums, the device to the product rounded to bf16: one
  // more rounding on the device, within the same bound. tanh and cudnn: both on the fp32 sums (the
  // device in cuBLASLt's epilogue, or cuDNN's fused matmul). cudnn also on 7 images, which run as
  // chunks of 4, 2 and 1 (wrong if a chunk's rows did not advance).
  for (const Bf16Gelu gelu : {Bf16Gelu::erf, Bf16Gelu::tanh, Bf16Gelu::cudnn}) {
    const ScopedEngineSettings scope(&EngineSettings::bf16_gelu, gelu);
    for (const int64_t images : {2, 7}) {
      if (images == 7 && gelu != Bf16Gelu::cudnn) continue;
      check_cuda_forward_parity(
          std::string("bf16_linear_gelu ") + bf16_gelu_name(gelu) + " on " + std::to_string(images) + " images",
          [](auto& x) { return as_f32(bf16_linear_gelu(as_bf16(x[0]), x[1], x[2])); },
          {random_f32({images, 9, 64}, 16), random_f32({48, 64}, 17, -0.2, 0.2), random_f32({48}, 18)},
          device_tolerance, device_tolerance);
    }
  }
  // One output feature: cuBLASLt is not asked; the product, then the bias kernel.
  check_cuda_forward_parity(
      "bf16_linear unfused",
      [](auto& x) { return as_f32(bf16_linear(as_bf16(x[0]), x[1], x[2], as_bf16(x[3]))); },
      {random_f32({7, 16}, 12), random_f32({1, 16}, 13), random_f32({1}, 14), random_f32({7, 1}, 15)},
      device_tolerance, device_tolerance);
}

TEST_CASE("bf16 linear with GELU takes the setting's form on each device: erf, tanh (cuBLASLt), erf in cuDNN's product") {
  if (!testing::cpu_runs_bf16_products()) return;
  // Pre-activations s on a grid of bf16 values from -4 to 3 (x's rows [s, 0.25, 0, ...] times weight
  // rows [1, 0, 0, ...], bias 0: every sum exact), so each output is GELU(s) computed in fp32 and
  // rounded once, on every path. Below about -2.3 the two forms differ by more than two bf16
  // roundings. Eight inputs, so that cuDNN's graph takes the product (it needs multiples of 8).
  constexpr int64_t in = 8;
  std::vector<float> grid;
  for (int step = -64; step <= 48; ++step) {
    grid.insert(grid.end(), {step / 16.0f, 0.25f});
    grid.resize(grid.size() + in - 2, 0.0f);
  }
  const int64_t points = static_cast<int64_t>(grid.size()) / in;
  const Tensor x = from_vector(grid, {points, in}).to(DType::bf16);
  auto gelu_exact = [](GeluForm form, double s) {
    if (form == GeluForm::erf) return 0.5 * s * (1.0 + std::erf(s / std::sqrt(2.0)));
    return 0.5 * s * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (s + 0.044715 * s * s * s)));
  };
  // 48 outputs go through cuBLASLt (with the GELU epilogue for tanh) or cuDNN's graph (cudnn); one
  // output keeps the product off both: the product, then the GELU kernel of the form.
  for (const int64_t outputs : {48, 1})
    for (const Device device : {Device::cpu(), Device::cuda()})
      for (const Bf16Gelu gelu : {Bf16Gelu::erf, Bf16Gelu::tanh, Bf16Gelu::cudnn}) {
        const ScopedEngineSettings scope(&EngineSettings::bf16_gelu, gelu);
        std::vector<float> weight;
        for (int64_t o = 0; o < outputs; ++o) {
          weight.push_back(1.0f);
          weight.resize(weight.size() + in - 1, 0.0f);
        }
        const Tensor got = bf16_linear_gelu(x.to(device), from_vector(weight, {outputs, in}).to(device),
                                            zeros({outputs}, DType::f32, device))
                               .to(Device::cpu())
                               .to(DType::f32);
        const GeluForm form = gelu_form(gelu), other = form == GeluForm::erf ? GeluForm::tanh : GeluForm::erf;
        // A real GPU's cuBLASLt may take tanh from the hardware's approximation (tanh.approx.f32,
        // about 2^-11 relative), which moves 0.5·s·(1 + tanh) by up to 0.5·|s|·2^-10 in the tail:
        // there the tanh form gets that much more, and the two forms are not told apart.
        const bool hardware_tanh = form == GeluForm::tanh && device.is_cuda() && emu::emulated_device_count() == 0;
        int64_t told_apart = 0;
        for (int64_t p = 0; p < points; ++p)
          for (int64_t o = 0; o < outputs; ++o) {
            const double s = grid[static_cast<size_t>(in * p)], value = got.ptr<float>()[p * outputs + o];
            const double expected = gelu_exact(form, s), unexpected = gelu_exact(other, s);
            // One rounding (2^-8 relative), plus fp32's cancellation in 1 + tanh near s = -4.
            const double bound =
                std::fabs(expected) * (0x1p-8 + 2e-3) + (hardware_tanh ? 0.5 * std::fabs(s) * 0x1p-10 : 0);
            CAPTURE(outputs);
            CAPTURE(device);
            CAPTURE(bf16_gelu_name(gelu));
            CAPTURE(s);
            CHECK(std::fabs(value - expected) <= bound);
            told_apart += std::fabs(unexpected - expected) > 2 * bound;
          }
        if (!hardware_tanh) CHECK(told_apart >= 10 * outputs);
      }
}

TEST_CASE("bf16 linear with GELU on a GPU: tanh's epilogue and cuDNN's erf land nearer DINO's GELU than the erf path") {
  // Why the tanh form and cudnn are candidate defaults on a GPU: the erf path rounds the product to
  // bf16 before its GELU kernel (two roundings); the epilogues round once: tanh's approximation
  // error (at most about 5e-4) is smaller than the rounding it saves, and cuDNN's GELU is the erf
  // form itself. Pre-activations spread about N(0, 2²), each output against the f64 erf GELU of
  // the exact sum of the bf16 inputs.
  const int64_t rows = 96, in = 64, out = 80;
  const Tensor x = as_bf16(random_f32({rows, in}, 60)), weight = as_bf16(random_f32({out, in}, 61, -0.75, 0.75));
  const Tensor bias = as_bf16(random_f32({out}, 62));
  const Tensor x64 = x.to(DType::f64), w64 = weight.to(DType::f64), b64 = bias.to(DType::f64);
  auto mean_error = [&](Bf16Gelu gelu) {
    const ScopedEngineSettings scope(&EngineSettings::bf16_gelu, gelu);
    const Device cuda = Device::cuda();
    const Tensor got = bf16_linear_gelu(x.to(cuda), weight.to(cuda), bias.to(cuda)).to(Device::cpu()).to(DType::f64);
    double total = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double sum = b64.ptr<double>()[o];
        for (int64_t i = 0; i < in; ++i) sum += x64.ptr<double>()[r * in + i] * w64.ptr<double>()[o * in + i];
        total += std::fabs(got.ptr<double>()[r * out + o] - 0.5 * sum * (1.0 + std::erf(sum / std::sqrt(2.0))));
      }
    return total / static_cast<double>(rows * out);
  };
  const double erf_error = mean_error(Bf16Gelu::erf), tanh_error = mean_error(Bf16Gelu::tanh);
  const double cudnn_error = mean_error(Bf16Gelu::cudnn);
  CAPTURE(erf_error);
  CAPTURE(tanh_error);
  CAPTURE(cudnn_error);
  CHECK(tanh_error < 0.9 * erf_error);
  CHECK(cudnn_error < 0.9 * erf_error);
  CHECK(cudnn_error <= tanh_error);
}

TEST_CASE("bf16 linear with cuDNN's GELU: the path that runs, sizes refused, the graph planned for a Hopper GPU") {
  if (!testing::cpu_runs_bf16_products()) return;
  const ScopedEngineSettings cudnn(&EngineSettings::bf16_gelu, Bf16Gelu::cudnn);
  const Device cuda = Device::cuda();
  // Sizes cuDNN's graph takes: its own kernel; 12 inputs: erf's product and pass instead, the same
  // bits as the erf setting.
  for (const int64_t in : {16, 12}) {
    const Tensor x = as_bf16(random_f32({3, 5, in}, 70)).to(cuda);
    const Tensor weight = random_f32({24, in}, 71, -0.3, 0.3).to(cuda), bias = random_f32({24}, 72).to(cuda);
    if (emu::emulated_device_count() > 0) {
      const emu::RangeRecording recording;
      const Tensor y = bf16_linear_gelu(x, weight, bias);
      const std::vector<std::string> names = recording.names();
      CAPTURE(in);
      CHECK((std::find(names.begin(), names.end(), "linear_gelu_bf16_cudnn") != names.end()) == (in == 16));
    }
    if (in == 12) {
      const Tensor y = bf16_linear_gelu(x, weight, bias).to(Device::cpu());
      const ScopedEngineSettings erf(&EngineSettings::bf16_gelu, Bf16Gelu::erf);
      const Tensor expected = bf16_linear_gelu(x, weight, bias).to(Device::cpu());
      CHECK(std::memcmp(y.ptr<bf16>(), expected.ptr<bf16>(), static_cast<size_t>(y.numel()) * sizeof(bf16)) == 0);
    }
  }
  const Tensor x = as_bf16(random_f32({2, 4, 16}, 73)).to(cuda), y = empty({2, 4, 16}, DType::bf16, cuda);
  const Tensor w = as_bf16(random_f32({16, 16}, 74)).to(cuda), b = as_bf16(random_f32({16}, 75)).to(cuda);
  // A plan where the sizes suit (through the emulated cuDNN, or the real one on a GPU, where a
  // refusal would otherwise pass unseen: bf16_linear_gelu falls back to the erf path).
  std::string why;
  CHECK_MESSAGE(cuda::linear_gelu_bf16_cudnn_supported(x.ptr<bf16>(), w.ptr<bf16>(), b.ptr<bf16>(), y.ptr<bf16>(), 2,
                                                       4, 16, 16, &why),
                why);
  CHECK_FALSE(cuda::linear_gelu_bf16_cudnn_supported(x.ptr<bf16>() + 1, w.ptr<bf16>(), b.ptr<bf16>(),
                                                     y.ptr<bf16>(), 2, 4, 16, 16, &why));
  CHECK(why.find("16-byte aligned") != std::string::npos);
  CHECK_THROWS_WITH_AS(cuda::linear_gelu_bf16_cudnn(2, 4, 12, 16, x.ptr<bf16>(), w.ptr<bf16>(), b.ptr<bf16>(),
                                                    const_cast<bf16*>(y.ptr<bf16>())),
                       doctest::Contains("multiples of 8"), std::invalid_argument);
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("the real cuDNN left out under AddressSanitizer: it keeps allocations to the process's end");
#else
  // The real cuDNN (where installed) takes the graph, and told about a Hopper GPU plans fc1 for
  // ViT-B/16, DINOv2's ViT-B/14 (without and with registers), ViT-S/14 and the demo's model.
  const RealCudnn real;
  if (!real.usable) return;
  for (const auto& [rows, in, out] : {std::tuple<int64_t, int64_t, int64_t>{128 * 197, 768, 3072},
                                      {128 * 257, 768, 3072}, {128 * 261, 768, 3072}, {128 * 257, 384, 1536},
                                      {64 * 17, 64, 256}}) {
    INFO(rows, " rows, ", in, " -> ", out);
    CHECK_NOTHROW(cuda::check_linear_gelu_bf16_cudnn_graph(rows, in, out));
    check_planned_for_hopper(cuda::linear_gelu_bf16_cudnn_engine_verdicts(rows, in, out, kHopperDescription),
                             !real.driver.empty());
  }
#endif
}

TEST_CASE("bf16 inference ops stay within bf16's rounding of their f32 ops") {
  if (!testing::cpu_runs_bf16_products()) return;
  const Tensor x = random_f32({6, 17, 48}, 20, -2, 2), weight = random_f32({96, 48}, 21, -0.3, 0.3);
  const Tensor bias = random_f32({96}, 22), gamma = random_f32({48}, 23), beta = random_f32({48}, 24);
  const Tensor residual = random_f32({6, 17, 96}, 25);
  // bf16 keeps 8 significant bits: relative error ≤ 2^-8 per rounding, a few roundings per result.
  const double tolerance = 3e-2;
  check_close("bf16_layer_norm", layer_norm(x, gamma, beta, 1e-6), as_f32(bf16_layer_norm(as_bf16(x), gamma, beta, 1e-6)),
              tolerance, tolerance);
  check_close("bf16_gelu", gelu(x), as_f32(bf16_gelu(as_bf16(x))), tolerance, tolerance);
  check_close("bf16_linear", linear(x, weight, bias) + residual,
              as_f32(bf16_linear(as_bf16(x), weight, bias, as_bf16(residual))), tolerance, tolerance);
  check_close("bf16_linear without bias", linear(x, weight), as_f32(bf16_linear(as_bf16(x), weight, Tensor())),
              tolerance, tolerance);
  check_close("bf16_linear_gelu", gelu(linear(x, weight, bias)), as_f32(bf16_linear_gelu(as_bf16(x), weight, bias)),
              tolerance, tolerance);

  // The attention of layers/attention.cpp in f32: [B, T, 3, H, hd] → q, k, v [B, H, T, hd].
  const Tensor qkv = random_f32({2, 17, 3 * 48}, 26, -2, 2);
  const Tensor heads = permute(reshape(qkv, {2, 17, 3, 3, 16}), {2, 0, 3, 1, 4});
  const Shape per_head{2, 3, 17, 16};
  const Tensor q = reshape(slice(heads, 0, 0, 1), per_head), k = reshape(slice(heads, 0, 1, 2), per_head);
  const Tensor v = reshape(slice(heads, 0, 2, 3), per_head);
  const Tensor weights = softmax(matmul(q, transpose(k, -1, -2)) * 0.25);
  const Tensor expected = reshape(permute(matmul(weights, v), {0, 2, 1, 3}), {2, 17, 48});
  check_close("bf16_attention", expected, as_f32(bf16_attention(as_bf16(qkv), 3)), tolerance, tolerance);
}

TEST_CASE("bf16 inference ops refuse what they cannot do") {
  const Tensor x = as_bf16(random_f32({3, 8}, 30)), weight = random_f32({4, 8}, 31);
  CHECK_THROWS_WITH(bf16_linear(x, weight.detach().set_requires_grad(true), Tensor()),
                    doctest::Contains("forward only (the frozen blocks)"));
  CHECK_THROWS_WITH(bf16_linear(x.to(DType::f32), weight, Tensor()), doctest::Contains("expected a bf16 tensor"));
  CHECK_THROWS_WITH(bf16_linear(x, random_f32({4, 7}, 32), Tensor()), doctest::Contains("does not fit weight"));
  CHECK_THROWS_WITH(bf16_linear(x, weight, Tensor(), as_bf16(random_f32({3, 5}, 33))),
                    doctest::Contains("does not match the output [3, 4]"));
  CHECK_THROWS_WITH(bf16_linear_gelu(x, random_f32({4, 7}, 34), Tensor()),
                    doctest::Contains("bf16_linear_gelu: input bf16[3, 8] cpu does not fit weight"));
  CHECK_THROWS_WITH(bf16_attention(x, 3), doctest::Contains("expected qkv [B, T, 3·D]"));
}

TEST_CASE("vit: frozen blocks in bf16 (matmul precision bf16) give the f32 model's CLS features") {
  if (!testing::cpu_runs_bf16_products()) return;
  SimGCDModel model(small_simgcd_config());
  model.initialize(7);
  model.set_grad_from_block(2);
  const Tensor images = random_f32({3, 3, 32, 32}, 40, -2, 2);
  const Tensor reference = model.backbone.forward(images);
  Tensor cpu_bf16, cuda_bf16;
  {
    const ScopedEngineSettings bf16(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
    cpu_bf16 = model.backbone.forward(images);
    model.to(Device::cuda());
    cuda_bf16 = model.backbone.forward(images.to(Device::cuda())).to(Device::cpu());
  }
  for (const Tensor* got : {&cpu_bf16, &cuda_bf16}) {
    const Tensor cosine = sum(l2_normalize(reference) * l2_normalize(*got), 1);
    for (float c : cosine.to_vector<float>()) CHECK(c > 0.999f);
  }
  check_close("bf16 ViT, device against host", cpu_bf16, cuda_bf16, 5e-2, 5e-2);
}
