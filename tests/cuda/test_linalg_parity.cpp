// cuBLAS products (through the emulator's column-major stand-in, or the real library) against
// OpenBLAS: every transpose combination, leading dimensions wider than the matrix, strided
// batches, the three precision modes; then matmul, linear and the patch convolution through
// the tensor API, forward and backward.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ops.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/gemm.h"
#include "tests/bf16_support.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
// C = op(A)·op(B) + 0.5·C for an m×n C inside a wider buffer (ldc = n + 3), two batch entries.
void check_gemm_layout(bool trans_a, bool trans_b, cuda::GemmMode mode, double tolerance) {
  const int64_t m = 5, n = 7, k = 9, batch = 2;
  const int64_t lda = (trans_a ? m : k) + 2, ldb = (trans_b ? k : n) + 1, ldc = n + 3;
  const int64_t rows_a = trans_a ? k : m, rows_b = trans_b ? n : k;
  const Tensor a = random_tensor({batch, rows_a, lda}, 1, -1, 1, DType::f32);
  const Tensor b = random_tensor({batch, rows_b, ldb}, 2, -1, 1, DType::f32);
  const Tensor c = random_tensor({batch, m, ldc}, 3, -1, 1, DType::f32);
  Tensor expected = c.clone();
  // bf16 mode rounds the inputs to bf16 once: the reference multiplies the same rounded values.
  const bool rounded = mode == cuda::GemmMode::bf16;
  const Tensor a_ref = rounded ? a.to(DType::bf16).to(DType::f32) : a, b_ref = rounded ? b.to(DType::bf16).to(DType::f32) : b;
  for (int64_t i = 0; i < batch; ++i)
    cpu::gemm(trans_a, trans_b, m, n, k, 1.0f, a_ref.data<float>() + i * a.numel() / batch, lda,
              b_ref.data<float>() + i * b.numel() / batch, ldb, 0.5f, expected.data<float>() + i * c.numel() / batch,
              ldc);
  Tensor got = c.to(Device::cuda());
  cuda::gemm(trans_a, trans_b, m, n, k, 1.0f, a.to(Device::cuda()).ptr<float>(), lda, a.numel() / batch,
             b.to(Device::cuda()).ptr<float>(), ldb, b.numel() / batch, 0.5f, got.ptr<float>(), ldc, c.numel() / batch,
             batch, mode);
  check_close("gemm", expected, got, tolerance, tolerance);
}
}  // namespace

TEST_CASE("cuda gemm: all transposes, padded leading dimensions, batches, fp32, tf32 and bf16") {
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true}) {
      CAPTURE(trans_a);
      CAPTURE(trans_b);
      check_gemm_layout(trans_a, trans_b, cuda::GemmMode::fp32, 1e-5);
      check_gemm_layout(trans_a, trans_b, cuda::GemmMode::tf32, 5e-3);  // 10-bit mantissa inputs, K = 9
      check_gemm_layout(trans_a, trans_b, cuda::GemmMode::bf16, 1e-5);  // against the rounded inputs
    }
}

TEST_CASE("cuda gemm: bf16 inputs with fp32 accumulation") {
  const int64_t m = 3, n = 4, k = 64;
  const Tensor a = random_tensor({m, k}, 4, -1, 1, DType::f32).to(DType::bf16);
  const Tensor b = random_tensor({n, k}, 5, -1, 1, DType::f32).to(DType::bf16);
  // Reference: the same bf16 values, multiplied in f32 on the CPU.
  Tensor expected = zeros({m, n});
  cpu::gemm(false, true, m, n, k, 1.0f, a.to(DType::f32).data<float>(), k, b.to(DType::f32).data<float>(), k, 0.0f,
            expected.data<float>(), n);
  Tensor got = zeros({m, n}, DType::f32, Device::cuda());
  cuda::gemm(false, true, m, n, k, 1.0f, a.to(Device::cuda()).ptr<bf16>(), k, 0, b.to(Device::cuda()).ptr<bf16>(), k,
             0, 0.0f, got.ptr<float>(), n, 0, 1);
  check_close("bf16 gemm", expected, got, 1e-5, 1e-5);
}

TEST_CASE("cuda gemm: sizes beyond cuBLAS's 32-bit range are refused") {
  Tensor c = zeros({1}, DType::f32, Device::cuda());
  CHECK_THROWS_WITH(cuda::gemm(false, false, int64_t(1) << 33, 1, 1, 1.0f, c.ptr<float>(), 1, 0, c.ptr<float>(), 1, 0,
                               0.0f, c.ptr<float>(), 1, 0, 1, cuda::GemmMode::fp32),
                    doctest::Contains("outside cuBLAS's 32-bit range"));
}

TEST_CASE("cuda parity: matmul, linear and the patch convolution") {
  check_cuda_parity("matmul", [](auto& x) { return matmul(x[0], x[1]); }, {leaf({3, 64}, 6), leaf({64, 197}, 7)});
  check_cuda_parity("matmul batched", [](auto& x) { return matmul(x[0], x[1]); },
                    {leaf({2, 3, 5, 8}, 8), leaf({2, 3, 8, 3}, 9)});
  check_cuda_parity("matmul shared b", [](auto& x) { return matmul(x[0], x[1]); },
                    {leaf({3, 5, 8}, 10), leaf({8, 6}, 11)});
  check_cuda_parity("matmul_transposed batched", [](auto& x) { return matmul_transposed(x[0], x[1]); },
                    {leaf({2, 3, 5, 8}, 29), leaf({2, 3, 7, 8}, 30)});
  check_cuda_parity("matmul_transposed shared b", [](auto& x) { return matmul_transposed(x[0], x[1]); },
                    {leaf({3, 5, 8}, 31), leaf({6, 8}, 32)});
  check_cuda_parity("matmul_transposed scaled (the alpha of every product)",
                    [](auto& x) { return matmul_transposed(x[0], x[1], 0.3); }, {leaf({2, 3, 5, 8}, 33), leaf({2, 3, 7, 8}, 34)});
  check_cuda_parity("linear", [](auto& x) { return linear(x[0], x[1], x[2]); },
                    {leaf({197, 64}, 12), leaf({3, 64}, 13), leaf({3}, 14)}, 1e-5, 1e-4);
  check_cuda_parity("linear with a residual (cuBLASLt's C at beta 1)",
                    [](auto& x) { return linear(x[0], x[1], x[2], x[3]); },
                    {leaf({197, 64}, 35), leaf({24, 64}, 36), leaf({24}, 37), leaf({197, 24}, 38)}, 1e-5, 1e-4);
  check_cuda_parity("linear wide bias", [](auto& x) { return linear(x[0], x[1], x[2]); },
                    {leaf({3, 8}, 15), leaf({768, 8}, 16), leaf({768}, 17)});
  check_cuda_parity("linear, bias gradient over several row chunks",
                    [](auto& x) { return linear(x[0], x[1], x[2]); },
                    {leaf({600, 4}, 26), leaf({37, 4}, 27), leaf({37}, 28)}, 1e-5, 1e-4);
  check_cuda_parity("linear f64", [](auto& x) { return linear(x[0], x[1], x[2]); },
                    {leaf({5, 7}, 18, DType::f64), leaf({3, 7}, 19, DType::f64), leaf({3}, 20, DType::f64)}, 1e-12,
                    1e-12);
  check_cuda_parity("conv2d_patch", [](auto& x) { return conv2d_patch(x[0], x[1], x[2]); },
                    {leaf({2, 3, 8, 12}, 21), leaf({5, 3, 4, 4}, 22), leaf({5}, 23)});
}

TEST_CASE("cuda parity: TF32 matmul stays within TF32's rounding") {
  const ScopedEngineSettings tf32(&EngineSettings::matmul_precision, MatmulPrecision::tf32);
  check_cuda_parity("matmul tf32", [](auto& x) { return matmul(x[0], x[1]); },
                    {leaf({3, 64}, 24), leaf({64, 5}, 25)}, 2e-2, 2e-2);
}

TEST_CASE("cuda parity: bf16 matmul (autocast's rounding) stays within bf16's rounding of the fp32 result") {
  if (!testing::cpu_runs_bf16_products()) return;
  // 8-bit mantissa inputs: each product off by ≤ 2^-8 relative; K = 64 random-sign terms.
  const ScopedEngineSettings bf16(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
  check_cuda_parity("matmul bf16", [](auto& x) { return matmul(x[0], x[1]); },
                    {leaf({3, 64}, 24), leaf({64, 5}, 25)}, 5e-2, 5e-2);
  check_cuda_parity("matmul bf16 batched", [](auto& x) { return matmul(x[0], x[1]); },
                    {leaf({2, 3, 5, 8}, 8), leaf({2, 3, 8, 3}, 9)}, 5e-2, 5e-2);
}

TEST_CASE("matmul precision names") {
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16})
    CHECK(parse_matmul_precision(matmul_precision_name(p)) == p);
  CHECK_THROWS_WITH(parse_matmul_precision("fp16"), doctest::Contains("expected auto, fp32, tf32 or bf16, got 'fp16'"));
}
