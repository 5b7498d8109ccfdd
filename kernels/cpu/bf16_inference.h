// The frozen blocks' bf16 inference path on the host: the reference for the CUDA twins
// (kernels/cuda/bf16_inference.h, and gemm_bf16 / linear_bf16 of kernels/cuda/gemm.h). Inputs
// are widened to float, the math is the fp32 math of the device kernels (products through
// OpenBLAS's sgemm), and every output element is rounded to bf16 once.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {

// The n elements from x as floats.
inline std::vector<float> widened(const bf16* x, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  parallel_for(n, [&](int64_t i) { out[static_cast<size_t>(i)] = static_cast<float>(x[i]); });
  return out;
}

// Elements a row-major operand spans from its first to its last: op(X) is rows×cols, X stored
// transposed when `trans`, leading dimension ld.
inline int64_t operand_extent(bool trans, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t stored_rows = trans ? cols : rows, stored_cols = trans ? rows : cols;
  return (stored_rows - 1) * ld + stored_cols;
}

inline void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a,
                      int64_t lda, int64_t stride_a, const bf16* b, int64_t ldb, int64_t stride_b, bf16* c,
                      int64_t ldc, int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0) return;
  std::vector<float> product(static_cast<size_t>(m * n), 0.0f);
  for (int64_t i = 0; i < batch; ++i) {
    if (k > 0) {
      const std::vector<float> a32 = widened(a + i * stride_a, operand_extent(trans_a, m, k, lda));
      const std::vector<float> b32 = widened(b + i * stride_b, operand_extent(trans_b, k, n, ldb));
      gemm(trans_a, trans_b, m, n, k, alpha, a32.data(), lda, b32.data(), ldb, 0.0f, product.data(), n);
    }
    bf16* ci = c + i * stride_c;
    parallel_rows(m, n, [&](int64_t r) {
      for (int64_t col = 0; col < n; ++col) ci[r * ldc + col] = bf16(product[static_cast<size_t>(r * n + col)]);
    });
  }
}

inline void linear_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                        const bf16* residual, bf16* y) {
  if (rows == 0 || out == 0) return;
  // The product's start value: bias (+ residual), summed in fp32 as the epilogue does.
  std::vector<float> acc(static_cast<size_t>(rows * out));
  parallel_rows(rows, out, [&](int64_t r) {
    for (int64_t c = 0; c < out; ++c)
      acc[static_cast<size_t>(r * out + c)] =
          static_cast<float>(bias[c]) + (residual ? static_cast<float>(residual[r * out + c]) : 0.0f);
  });
  if (in > 0) {
    const std::vector<float> x32 = widened(x, rows * in), w32 = widened(w, out * in);
    gemm(false, true, rows, out, in, 1.0f, x32.data(), in, w32.data(), in, 1.0f, acc.data(), out);
  }
  parallel_for(rows * out, [&](int64_t i) { y[i] = bf16(acc[static_cast<size_t>(i)]); });
}

inline void layer_norm_bf16(const bf16* x, const float* gamma, const float* beta, bf16* y, int64_t rows, int64_t d,
                            float eps) {
  parallel_rows(rows, d, [&](int64_t r) {
    const bf16* xr = x + r * d;
    float sum = 0;
    for (int64_t c = 0; c < d; ++c) sum += static_cast<float>(xr[c]);
    const float mean = sum / static_cast<float>(d);
    float squares = 0;
    for (int64_t c = 0; c < d; ++c) {
      const float centred = static_cast<float>(xr[c]) - mean;
      squares += centred * centred;
    }
    const float rstd = 1.0f / std::sqrt(squares / static_cast<float>(d) + eps);
    for (int64_t c = 0; c < d; ++c) y[r * d + c] = bf16((static_cast<float>(xr[c]) - mean) * rstd * gamma[c] + beta[c]);
  });
}

inline void gelu_bf16(const bf16* x, bf16* y, int64_t n) {
  parallel_for(n, [&](int64_t i) {
    const float v = static_cast<float>(x[i]);
    y[i] = bf16(0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)));
  });
}

// In place allowed (y = x).
inline void softmax_bf16(const bf16* x, bf16* y, int64_t rows, int64_t d) {
  parallel_rows(rows, d, [&](int64_t r) {
    const bf16* xr = x + r * d;
    float top = -INFINITY;
    for (int64_t c = 0; c < d; ++c) top = std::fmax(top, static_cast<float>(xr[c]));
    float sum = 0;
    for (int64_t c = 0; c < d; ++c) sum += std::exp(static_cast<float>(xr[c]) - top);
    const float inverse = 1.0f / sum;
    for (int64_t c = 0; c < d; ++c) y[r * d + c] = bf16(std::exp(static_cast<float>(xr[c]) - top) * inverse);
  });
}

}  // namespace mcdl::cpu
