// What the register-resident attention kernels (flash on mma.sync, wgmma on Hopper's warpgroup
// products) share, with the fused kernel's launcher the scaling of their exponent: where one head's queries, keys and values lie in the fused projection, the
// queries loaded as A fragments, and the context written from output accumulators. The fragment
// layout is mma.m16n8k16's (kernels/cuda/mma.h), which wgmma's A and accumulators repeat; with
// g = lane / 4 and t = lane % 4 a lane holds rows g and g + 8 of a 16-row tile.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/mma.h"

namespace mcdl::cuda {

// The attention kernels take exp(x) as exp2(x·log2(e)): their launchers pass scale·log2(e).
constexpr float attention_log2_e = 1.44269504088896341f;

// Head `head` (b·H + h) of qkv [B, T, 3, H, HD]: its first query, key and value rows and the
// stride between tokens; its context rows start at context + ((b·T + row)·H + h)·HD.
template <int HD>
struct HeadOperands {
  int64_t heads, row_stride, b, h;
  const bf16 *q, *k, *v;

  __device__ __forceinline__ HeadOperands(const bf16* qkv, int64_t tokens, int64_t heads_, int64_t head)
      : heads(heads_),
        row_stride(3 * heads_ * HD),
        b(head / heads_),
        h(head % heads_),
        q(qkv + b * tokens * row_stride + h * HD),
        k(q + heads_ * HD),
        v(q + 2 * heads_ * HD) {}
};

// The A fragments of query rows first_row .. first_row + 15, all HD dimensions (zeros past the
// last token).
template <int HD>
__device__ __forceinline__ void load_query_fragments(uint32_t (&q)[HD / 16][4], const HeadOperands<HD>& head,
                                                     int64_t first_row, int64_t tokens, int g, int t) {
  const auto pair = [](const bf16* p) { return *reinterpret_cast<const uint32_t*>(p); };
  const int64_t lo = first_row + g, hi = lo + 8;
  MCDL_UNROLL
  for (int s = 0; s < HD / 16; ++s) {
    const int col = 16 * s + 2 * t;
    q[s][0] = lo < tokens ? pair(head.q + lo * head.row_stride + col) : 0u;
    q[s][1] = hi < tokens ? pair(head.q + hi * head.row_stride + col) : 0u;
    q[s][2] = lo < tokens ? pair(head.q + lo * head.row_stride + col + 8) : 0u;
    q[s][3] = hi < tokens ? pair(head.q + hi * head.row_stride + col + 8) : 0u;
  }
}

// Context row `row` (a lane's g + 8r of its tile) from output accumulators `out`, HD / 8 tiles of
// four (out[4n + 2r], out[4n + 2r + 1] its columns 8n + 2t and + 1), times `inverse` (1 / the
// row's sum), as one 32-bit store per tile.
template <int HD>
__device__ __forceinline__ void store_context_row(bf16* context, const HeadOperands<HD>& head, int64_t tokens,
                                                  int64_t row, const float* out, int r, float inverse, int t) {
  bf16* target = context + ((head.b * tokens + row) * head.heads + head.h) * HD + 2 * t;
  MCDL_UNROLL
  for (int n = 0; n < HD / 8; ++n)
    *reinterpret_cast<uint32_t*>(target + 8 * n) =
        pack_bf16x2(out[4 * n + 2 * r] * inverse, out[4 * n + 2 * r + 1] * inverse);
}

}  // namespace mcdl::cuda
