// The frozen blocks' bf16 inference path on the host: the reference for the CUDA twins
// (kernels/cuda/bf16_inference.h, and linear_bf16 of kernels/cuda/gemm.h). Inputs
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

// DINO's attention core (kernels/cuda/bf16_inference.h) with the fused kernel's roundings, those of
// flash attention: the scores scale·q·kᵀ and the softmax in fp32; the numerators exp(s − max)
// rounded to bf16 for the product with v, which accumulates in fp32 and is then divided by the
// fp32 sum of the unrounded numerators; one rounding of each output element.
inline void attention_bf16(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                           int64_t head_dim, float scale) {
  const int64_t width = heads * head_dim, ld_qkv = 3 * width;
  const std::vector<float> all = widened(qkv, batch * tokens * ld_qkv);
  std::vector<float> s(static_cast<size_t>(tokens * tokens)), o(static_cast<size_t>(tokens * head_dim));
  std::vector<float> inverse_sum(static_cast<size_t>(tokens));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const float* q = all.data() + b * tokens * ld_qkv + h * head_dim;
      gemm(false, true, tokens, tokens, head_dim, scale, q, ld_qkv, q + width, ld_qkv, 0.0f, s.data(), tokens);
      parallel_rows(tokens, tokens, [&](int64_t r) {
        float* row = s.data() + r * tokens;
        float top = -INFINITY;
        for (int64_t c = 0; c < tokens; ++c) top = std::fmax(top, row[c]);
        float sum = 0;
        for (int64_t c = 0; c < tokens; ++c) {
          const float numerator = std::exp(row[c] - top);
          sum += numerator;
          row[c] = static_cast<float>(bf16(numerator));
        }
        inverse_sum[static_cast<size_t>(r)] = 1.0f / sum;
      });
      gemm(false, false, tokens, head_dim, tokens, 1.0f, s.data(), tokens, q + 2 * width, ld_qkv, 0.0f, o.data(),
           head_dim);
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t j = 0; j < head_dim; ++j)
          context[(b * tokens + t) * width + h * head_dim + j] =
              bf16(o[static_cast<size_t>(t * head_dim + j)] * inverse_sum[static_cast<size_t>(t)]);
    }
}

}  // namespace mcdl::cpu
