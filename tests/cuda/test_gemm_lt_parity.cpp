// The linear layer's fused bias: cuda::gemm_bias (cuBLASLt's BIAS epilogue, through the
// emulator's stand-in or the real library) against OpenBLAS — every transpose, padded and
// misaligned inputs, fp32, TF32 and f64, and the cases that take the unfused path — then
// linear through the tensor API, forward and backward, f32 and f64.
#include <doctest/doctest.h>

#include <cmath>
#include <type_traits>

#include "engine/ops.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/gemm.h"
#include "tests/bf16_support.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

struct BiasProduct {
  int64_t m, n, k;
  bool trans_a = false, trans_b = false;
  int64_t offset = 0;       // A and B start this many elements into their buffers (off 256-byte alignment)
  int64_t bias_offset = 0;  // likewise for the bias
  int64_t residual_offset = -1;  // ≥ 0: a residual C added too, this many elements into its buffer
};

// C = op(A)·op(B) + bias (+ residual) through cuda::gemm_bias into a NaN-filled C (the fused
// product never reads it), against OpenBLAS in double on the same values. A and B have leading
// dimensions wider than the matrix. Returns whether the bias was fused into the GEMM.
template <class T>
bool check_gemm_bias(const BiasProduct& p, cuda::GemmMode mode, double tolerance) {
  const DType dtype = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  const int64_t lda = (p.trans_a ? p.m : p.k) + 2, ldb = (p.trans_b ? p.k : p.n) + 1;
  const int64_t rows_a = p.trans_a ? p.k : p.m, rows_b = p.trans_b ? p.n : p.k;
  const Tensor a = random_tensor({rows_a * lda + p.offset}, 1, -1, 1, dtype);
  const Tensor b = random_tensor({rows_b * ldb + p.offset}, 2, -1, 1, dtype);
  const Tensor bias = random_tensor({p.n + p.bias_offset}, 3, -1, 1, dtype);

  // bf16 mode rounds A and B to bf16 once: the reference multiplies the same rounded values.
  const bool rounded = mode == cuda::GemmMode::bf16;
  const Tensor a64 = (rounded ? a.to(DType::bf16) : a).to(DType::f64), b64 = (rounded ? b.to(DType::bf16) : b).to(DType::f64);
  const Tensor bias64 = bias.to(DType::f64);
  Tensor expected = empty({p.m, p.n}, DType::f64);
  cpu::broadcast_rows(bias64.data<double>() + p.bias_offset, expected.data<double>(), p.m, p.n);
  cpu::gemm(p.trans_a, p.trans_b, p.m, p.n, p.k, 1.0, a64.data<double>() + p.offset, lda,
            b64.data<double>() + p.offset, ldb, 1.0, expected.data<double>(), p.n);
  const bool with_residual = p.residual_offset >= 0;
  const Tensor residual = random_tensor({p.m * p.n + std::max<int64_t>(p.residual_offset, 0)}, 4, -1, 1, dtype);
  if (with_residual) {
    const Tensor residual64 = residual.to(DType::f64);
    for (int64_t i = 0; i < p.m * p.n; ++i) expected.data<double>()[i] += residual64.data<double>()[p.residual_offset + i];
  }

  const Tensor a_dev = a.to(Device::cuda()), b_dev = b.to(Device::cuda()), bias_dev = bias.to(Device::cuda());
  const Tensor residual_dev = residual.to(Device::cuda());
  Tensor got = full({p.m, p.n}, NAN, dtype, Device::cuda());
  const bool fused = cuda::gemm_bias(p.trans_a, p.trans_b, p.m, p.n, p.k, a_dev.ptr<T>() + p.offset, lda,
                                     b_dev.ptr<T>() + p.offset, ldb, bias_dev.ptr<T>() + p.bias_offset,
                                     with_residual ? residual_dev.ptr<T>() + p.residual_offset : nullptr,
                                     got.ptr<T>(), mode);
  check_close("gemm_bias", expected.to(dtype), got, tolerance, tolerance);
  return fused;
}

// Tolerances against the double reference, inputs in [-1, 1):
// - fp32: fp32 accumulation over K ≤ 64 terms (sums ≲ 8): rounding ≲ 1e-5;
// - TF32: every input rounded to 10 mantissa bits (≤ 2^-11 relative; ≤ 2^-10 where the tensor
//   cores truncate), random-sign errors over K ≤ 64 terms: ~3e-3 typical, 1e-2 with margin;
// - f64: 1e-12.
constexpr double fp32_tolerance = 2e-5, tf32_tolerance = 1e-2, f64_tolerance = 1e-12;

const BiasProduct odd_shapes[] = {{3, 197, 64}, {197, 768, 3}, {5, 7, 9}};

// Calls check(p) for every shape of odd_shapes with every transpose of A and B.
template <class F>
void for_odd_shapes_and_transposes(F check) {
  for (BiasProduct p : odd_shapes)
    for (bool trans_a : {false, true})
      for (bool trans_b : {false, true}) {
        p.trans_a = trans_a;
        p.trans_b = trans_b;
        CAPTURE(p.m);
        CAPTURE(p.n);
        CAPTURE(p.k);
        CAPTURE(trans_a);
        CAPTURE(trans_b);
        check(p);
      }
}

}  // namespace

TEST_CASE("cuda gemm_bias: cuBLASLt's bias epilogue, all transposes, fp32, tf32 and bf16") {
  for_odd_shapes_and_transposes([](const BiasProduct& p) {
    CHECK(check_gemm_bias<float>(p, cuda::GemmMode::fp32, fp32_tolerance));
    CHECK(check_gemm_bias<float>(p, cuda::GemmMode::tf32, tf32_tolerance));
    CHECK(check_gemm_bias<float>(p, cuda::GemmMode::bf16, fp32_tolerance));  // bf16 operands, f32 bias and output
  });
}

TEST_CASE("cuda gemm_bias: a residual added in the epilogue (C at beta 1), fused and unfused, every mode") {
  // The values in every case (checked inside); whether cuBLASLt takes a residual C is its
  // heuristic's answer, so only the engine's own refusals are asserted.
  for_odd_shapes_and_transposes([](BiasProduct p) {
    p.residual_offset = 0;
    (void)check_gemm_bias<float>(p, cuda::GemmMode::fp32, fp32_tolerance);
    (void)check_gemm_bias<float>(p, cuda::GemmMode::tf32, tf32_tolerance);
    (void)check_gemm_bias<float>(p, cuda::GemmMode::bf16, fp32_tolerance);
    (void)check_gemm_bias<double>(p, cuda::GemmMode::fp32, f64_tolerance);
  });
  (void)check_gemm_bias<float>({3, 197, 64, false, true, 0, 0, 1}, cuda::GemmMode::fp32, fp32_tolerance);
  // A bias off 16-byte alignment, and one output feature, take the unfused path: the residual added after.
  CHECK_FALSE(check_gemm_bias<float>({3, 197, 64, false, true, 0, 1, 0}, cuda::GemmMode::fp32, fp32_tolerance));
  CHECK_FALSE(check_gemm_bias<float>({197, 1, 64, false, true, 0, 0, 0}, cuda::GemmMode::tf32, tf32_tolerance));
}

TEST_CASE("cuda gemm_bias: f64 through CUBLAS_COMPUTE_64F") {
  for_odd_shapes_and_transposes(
      [](const BiasProduct& p) { CHECK(check_gemm_bias<double>(p, cuda::GemmMode::fp32, f64_tolerance)); });
}

TEST_CASE("cuda gemm_bias: inputs off 256-byte alignment still fuse (the heuristic is told, per alignment)") {
  // The same shape aligned, then A and B one element in: a cached choice made for aligned
  // buffers must not be reused for the unaligned ones.
  CHECK(check_gemm_bias<float>({3, 197, 64, false, true}, cuda::GemmMode::fp32, fp32_tolerance));
  CHECK(check_gemm_bias<float>({3, 197, 64, false, true, 1}, cuda::GemmMode::fp32, fp32_tolerance));
  CHECK(check_gemm_bias<double>({3, 197, 64, false, true, 1}, cuda::GemmMode::fp32, f64_tolerance));
  // A bias 32 bytes in is still 16-byte aligned.
  CHECK(check_gemm_bias<float>({3, 197, 64, false, true, 0, 8}, cuda::GemmMode::fp32, fp32_tolerance));
}

TEST_CASE("cuda gemm_bias: the unfused path gives the same values") {
  // One output feature, one input feature, a bias off 16-byte alignment: broadcast + GEMM.
  CHECK_FALSE(check_gemm_bias<float>({197, 1, 64, false, true}, cuda::GemmMode::fp32, fp32_tolerance));
  CHECK_FALSE(check_gemm_bias<float>({3, 197, 1, false, true}, cuda::GemmMode::tf32, tf32_tolerance));
  CHECK_FALSE(check_gemm_bias<float>({3, 197, 1, false, true}, cuda::GemmMode::bf16, fp32_tolerance));
  CHECK_FALSE(check_gemm_bias<float>({3, 197, 64, false, true, 1, 1}, cuda::GemmMode::bf16, fp32_tolerance));
  CHECK_FALSE(check_gemm_bias<float>({3, 197, 64, false, true, 0, 1}, cuda::GemmMode::fp32, fp32_tolerance));
  CHECK_FALSE(check_gemm_bias<double>({3, 197, 64, false, true, 0, 1}, cuda::GemmMode::fp32, f64_tolerance));
}

TEST_CASE("cuda gemm_bias: sizes beyond cuBLAS's 32-bit range are refused") {
  Tensor c = zeros({1}, DType::f32, Device::cuda());
  CHECK_THROWS_WITH(cuda::gemm_bias(false, true, int64_t(1) << 33, 2, 2, c.ptr<float>(), 2, c.ptr<float>(), 2,
                                    c.ptr<float>(), nullptr, c.ptr<float>(), cuda::GemmMode::fp32),
                    doctest::Contains("outside cuBLAS's 32-bit range"));
}

namespace {
// linear on f32 and f64 copies of x [rows, in], weight [out, in] and bias [out], on the CPU
// and the device; `backward` adds the gradients (unchanged by the fused forward, but the
// saved tensors and the output feed them).
void check_linear_parity(const Shape& x_shape, const Shape& w_shape, uint64_t seed, bool backward) {
  auto linear_fn = [](auto& x) { return linear(x[0], x[1], x[2]); };
  auto run = backward ? check_cuda_parity : check_cuda_forward_parity;
  const int64_t out = w_shape[0];
  CAPTURE(out);
  // f32: the forward sums K ≤ 768 products and dX 2304 (values ≲ 30) in fp32 on both sides, in
  // different orders.
  run("linear f32", linear_fn, {leaf(x_shape, seed), leaf(w_shape, seed + 1), leaf({out}, seed + 2)}, 1e-4, 1e-4);
  run("linear f64", linear_fn,
      {leaf(x_shape, seed + 3, DType::f64), leaf(w_shape, seed + 4, DType::f64), leaf({out}, seed + 5, DType::f64)},
      1e-12, 1e-12);
}
}  // namespace

TEST_CASE("cuda parity: linear with the bias in cuBLASLt's epilogue, f32 and f64") {
  check_linear_parity({197, 64}, {3, 64}, 40, true);
  check_linear_parity({3, 8}, {768, 8}, 46, true);
  // ViT's 768 -> 2304: forward only here (the emulated backward kernels over the 1.8M-element
  // weight gradient take ~30 s); forward and backward in the slow suite.
  check_linear_parity({5, 768}, {2304, 768}, 52, false);
}

TEST_CASE("cuda parity: linear 768 -> 2304 forward and backward" * doctest::test_suite("slow")) {
  check_linear_parity({5, 768}, {2304, 768}, 52, true);
}

TEST_CASE("cuda parity: TF32 linear with the fused bias stays within TF32's rounding") {
  const ScopedEngineSettings tf32(&EngineSettings::matmul_precision, MatmulPrecision::tf32);
  check_cuda_parity("linear tf32", [](auto& x) { return linear(x[0], x[1], x[2]); },
                    {leaf({197, 64}, 60), leaf({3, 64}, 61), leaf({3}, 62)},
                    2e-2, 2e-2);
}

TEST_CASE("cuda parity: bf16 linear (operands rounded as autocast does) stays within bf16's rounding") {
  if (!testing::cpu_runs_bf16_products()) return;
  const ScopedEngineSettings bf16(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
  check_cuda_parity("linear bf16", [](auto& x) { return linear(x[0], x[1], x[2]); },
                    {leaf({197, 64}, 60), leaf({3, 64}, 61), leaf({3}, 62)}, 5e-2, 5e-2);
}
