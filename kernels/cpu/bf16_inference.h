// The frozen blocks' bf16 inference path on the host: the reference for the CUDA twins
// (kernels/cuda/bf16_inference.h, and linear_bf16 of kernels/cuda/gemm.h). Inputs are widened
// to float and the math is the fp32 math of the device kernels, the products bf16 products with
// fp32 accumulation through oneDNN (kernels/cpu/gemm_bf16.h); every output element is rounded to
// bf16 once.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/cpu/bf16_lanes.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"  // linear_bf16
#include "kernels/cpu/gelu_float.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/row_float.h"

namespace mcdl::cpu {

// f(row) on each row of x [rows, d] widened to float, then rounded into y once (y may be x); rows in
// blocks of sixteen over the threads, with one float row per block.
template <class F>
void map_rows_in_float(const bf16* x, bf16* y, int64_t rows, int64_t d, F&& f) {
  constexpr int64_t block = 16;
  parallel_rows((rows + block - 1) / block, block * d, [&](int64_t b) {
    std::vector<float> row(static_cast<size_t>(d));
    for (int64_t r = b * block; r < std::min(rows, (b + 1) * block); ++r) {
      widen_bf16(x + r * d, row.data(), d);
      f(row.data());
      round_to_bf16(row.data(), y + r * d, d);
    }
  });
}

// LayerNorm in float (row_float.h).
inline void layer_norm_bf16(const bf16* x, const float* gamma, const float* beta, bf16* y, int64_t rows, int64_t d,
                            float eps) {
  map_rows_in_float(x, y, rows, d, [&](float* row) { layer_norm_row(row, gamma, beta, row, d, eps); });
}

// In blocks that stay in cache: widened to float, the fp32 GELU (gelu_float.h), rounded once.
// (The three done sixteen elements at a time in registers was tried: 0.90–0.96× as fast on
// N(0, 1) inputs, one thread.)
inline void gelu_bf16(const bf16* x, bf16* y, int64_t n) {
  constexpr int64_t block = 4096;
  parallel_blocks(n, block, [&](int64_t begin, int64_t count) {
    float buffer[block];
    widen_bf16(x + begin, buffer, count);
    gelu_float(buffer, buffer, count);
    round_to_bf16(buffer, y + begin, count);
  });
}

// The exp that of the attention (row_float.h). In place allowed (y = x).
inline void softmax_bf16(const bf16* x, bf16* y, int64_t rows, int64_t d) {
  map_rows_in_float(x, y, rows, d, [&](float* row) {
    const float inverse = 1.0f / softmax_numerators(row, d);
    for (int64_t c = 0; c < d; ++c) row[c] *= inverse;
  });
}

// DINO's attention core (kernels/cuda/bf16_inference.h) with the fused kernel's roundings, those of
// flash attention: the scores scale·q·kᵀ and the softmax in fp32; the numerators exp(s − max)
// rounded to bf16 for the product with v, which accumulates in fp32 and is then divided by the
// fp32 sum of the unrounded numerators; one rounding of each output element. Both products are
// bf16 products through oneDNN over the (image, head) pairs of a few images at once, on head-major
// copies of q, k and v: their inputs are bf16 values already, so nothing is rounded that the kernel
// does not round.
inline void attention_bf16(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                           int64_t head_dim, float scale) {
  const int64_t width = heads * head_dim, head_size = tokens * head_dim, square = tokens * tokens;
  if (batch == 0 || heads == 0 || tokens == 0) return;
  // A few images at a time, so the scores stay in cache (about 4 MB at ViT-B/16's shapes) and the
  // buffers are made once.
  const int64_t chunk = std::clamp<int64_t>((int64_t(1) << 20) / (heads * square), 1, batch);
  std::vector<bf16> q(static_cast<size_t>(chunk * heads * head_size)), k(q.size()), v(q.size());
  std::vector<float> scores(static_cast<size_t>(chunk * heads * square)), out(q.size());
  std::vector<bf16> numerators(scores.size());
  std::vector<float> inverse_sum(static_cast<size_t>(chunk * heads * tokens));
  for (int64_t first = 0; first < batch; first += chunk) {
    const int64_t images = std::min(chunk, batch - first), pairs = images * heads;
    // q, k, v [images·H, T, hd] from qkv [B, T, 3, H, hd].
    parallel_rows(images * tokens, 3 * width, [&](int64_t bt) {
      const int64_t b = bt / tokens, t = bt % tokens;
      for (int64_t h = 0; h < heads; ++h) {
        const bf16* source = qkv + (first * tokens + bt) * 3 * width + h * head_dim;
        const int64_t at = (b * heads + h) * head_size + t * head_dim;
        std::copy(source, source + head_dim, q.begin() + at);
        std::copy(source + width, source + width + head_dim, k.begin() + at);
        std::copy(source + 2 * width, source + 2 * width + head_dim, v.begin() + at);
      }
    });
    gemm_bf16(false, true, tokens, tokens, head_dim, scale, q.data(), head_dim, head_size, k.data(), head_dim,
              head_size, 0.0f, scores.data(), tokens, square, pairs);
    parallel_rows(pairs * tokens, tokens, [&](int64_t r) {
      float* row = scores.data() + r * tokens;
      const float sum = softmax_numerators(row, tokens);
      round_to_bf16(row, numerators.data() + r * tokens, tokens);
      inverse_sum[static_cast<size_t>(r)] = 1.0f / sum;
    });
    gemm_bf16(false, false, tokens, head_dim, tokens, 1.0f, numerators.data(), tokens, square, v.data(), head_dim,
              head_size, 0.0f, out.data(), head_dim, head_size, pairs);
    parallel_rows(images * tokens, width, [&](int64_t bt) {
      const int64_t b = bt / tokens, t = bt % tokens;
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t row = (b * heads + h) * tokens + t;
        float* o = out.data() + row * head_dim;
        for (int64_t j = 0; j < head_dim; ++j) o[j] *= inverse_sum[static_cast<size_t>(row)];
        round_to_bf16(o, context + (first * tokens + bt) * width + h * head_dim, head_dim);
      }
    });
  }
}

}  // namespace mcdl::cpu
