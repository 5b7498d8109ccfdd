// Matrix products on the host through OpenBLAS (row-major). Never a hand-written loop.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/copy.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/parallel.h"
#include "kernels/gemm_mode.h"

namespace mcdl::cpu {

// C = alpha·op(A)·op(B) + beta·C, with op(X) = X or Xᵀ; A is M×K after op, B is K×N
// (cblas_sgemm and cblas_dgemm, kernels/cpu/gemm.cpp).
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// Which of OpenBLAS's kernel sets runs ("SkylakeX", "Haswell", "Zen" ...), and whether this
// program chose it. Debian 12's OpenBLAS 0.3.21 picks its kernels by the processor's model number
// and falls back to its generic SSE3 kernels ("Prescott") for models newer than it knows, Intel's
// Xeons since Sapphire Rapids among them: about three times slower there than its AVX-512 kernels
// (a demo-sized run: 96 s against 31 s). Before main, where OpenBLAS fell back so on a processor
// with AVX2 and FMA and $OPENBLAS_CORETYPE is not set, this program selects the kernels for the
// processor's features instead (kernels/cpu/gemm.cpp): SkylakeX for an Intel processor with
// AVX-512 (F, BW, VL), Zen for an AMD one, Haswell for others; the sets OpenBLAS itself picks for
// the models it knows. A processor OpenBLAS knows keeps OpenBLAS's choice; $OPENBLAS_CORETYPE
// overrides both.
std::string openblas_core();

// The batched form of kernels/cuda/gemm.h: C_i = alpha·op(A_i)·op(B_i) + beta·C_i for i < batch,
// X_i = X + i·stride_x (stride 0 = shared by every i), one product after the other. bf16 mode
// rounds f32 operands to bf16 and multiplies them through oneDNN (kernels/cpu/gemm_bf16.h); the
// host has no TF32, so tf32 mode (refused by the tools on the CPU) and f64 run in full precision.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          int64_t stride_a, const T* b, int64_t ldb, int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
          int64_t batch, GemmMode mode) {
  if constexpr (std::is_same_v<T, float>) {
    if (mode == GemmMode::bf16)
      return gemm_f32_as_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                              stride_c, batch);
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta, c + i * stride_c, ldc);
}

// out[r, :] = bias for every row: the start value for a linear layer's GEMM with beta = 1.
template <class T>
void broadcast_rows(const T* bias, T* out, int64_t rows, int64_t cols) {
  parallel_rows(rows, cols, [&](int64_t r) {
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = bias[c];
  });
}

// C = op(A)·op(B) + bias (+ residual), bias[j] added to column j of every row, C and the
// residual (or nullptr) contiguous m×n (the twin of cuda::gemm_bias). The bias is the GEMM's
// starting value (beta = 1): one pass over C, not two. The residual is added after the product,
// each element rounded once more, as a separate addition would: the bits of linear, then +.
// Returns false: the bias is never fused into the product here.
template <class T>
bool gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
               int64_t ldb, const T* bias, const T* residual, T* c, GemmMode mode) {
  broadcast_rows(bias, c, m, n);
  gemm(trans_a, trans_b, m, n, k, T(1), a, lda, 0, b, ldb, 0, T(1), c, n, 0, 1, mode);
  if (residual) accumulate(c, residual, m * n, false);
  return false;
}

// out[c] (=|+=) Σ_r in[r, c]. Rows are summed in fixed blocks whose partial sums are added
// in block order, so the result does not depend on the thread count.
template <class T>
void column_sums(const T* in, T* out, int64_t rows, int64_t cols, bool overwrite) {
  constexpr int64_t block = 256;
  const int64_t blocks = (rows + block - 1) / block;
  std::vector<double> partial(static_cast<size_t>(blocks * cols), 0.0);
  parallel_rows(blocks, block * cols, [&](int64_t b) {
    double* acc = partial.data() + b * cols;
    const int64_t end = (b + 1) * block < rows ? (b + 1) * block : rows;
    for (int64_t r = b * block; r < end; ++r)
      for (int64_t c = 0; c < cols; ++c) acc[c] += in[r * cols + c];
  });
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0.0;
    for (int64_t b = 0; b < blocks; ++b) s += partial[static_cast<size_t>(b * cols + c)];
    out[c] = overwrite ? static_cast<T>(s) : static_cast<T>(out[c] + s);
  }
}

}  // namespace mcdl::cpu
