// The frozen blocks' attention on Hopper's warpgroup products (attention_bf16_wgmma): head size
// 64 and up to 512 tokens, ViT-B/16's 197 and DINOv2 ViT-B/14's 257 and 261 among them.
//
// A block is one warpgroup (four warps) and 64 query rows of one head. At these lengths a head's
// keys and values fit in shared memory whole (128 KB at 512 tokens): the block stages every key
// and value at once with asynchronous copies, keys and values as two groups. Up to 256 keys run as
// one round: all the scores S = Q·Kᵀ of the block's rows in registers (a 64×64 warpgroup product
// per 64 keys and 16 dimensions, Q's fragments as the A operand), computed while the values still
// land; each row's max and sum taken across the four lanes that hold it; the numerators
// P = exp(scale·S − max) rounded to bf16 where they lie, which is already the A operand of
// O = P·V; and the division by the sum at the end. Longer sequences run in rounds of 192 keys,
// FlashAttention's online softmax between them (the output and sum rescaled to each new max). The
// roundings are the fused and flash kernels' (fp32 scores and softmax, bf16 numerators).
//
// Keys and values are staged in the layout the products read without swizzle (kernels/cuda/wgmma.h):
// 8×8 core matrices [key / 8][dimension / 8] of 128 contiguous bytes, 16 bytes per key. Keys are
// the K-major B operand of Q·Kᵀ; values, in the same layout, the MN-major B operand of P·V.
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/async_copy.h"
#include "kernels/cuda/attention_fragments.h"
#include "kernels/cuda/attention_wgmma.h"
#include "kernels/cuda/bf16_inference.h"
#include "kernels/cuda/block_reduce.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/mma.h"
#include "kernels/cuda/wgmma.h"

namespace mcdl::cuda {
namespace {

constexpr int head_size = 64;
constexpr int block_rows = 64;           // query rows per block: one warpgroup's product
constexpr int chunk_keys = 64;           // keys per score product (its N)
constexpr int core_bytes = 128;          // one 8×8 core matrix of bf16
constexpr int key_group_bytes = 8 * core_bytes;  // 8 keys × 64 dimensions

// The bf16 offset of key `key`, dimension `dim` in a staged tile.
__device__ __forceinline__ int staged_offset(int key, int dim) {
  return ((key / 8) * 8 + dim / 8) * (core_bytes / 2) + (key % 8) * 8 + dim % 8;
}

// Up to 256 keys (four 64-key chunks) run as one round, their scores all in registers. Longer
// sequences run in rounds of three chunks, so that the output accumulators, live across rounds,
// fit beside the scores, and a last round of one to three.
constexpr int single_round_chunks = 4;
constexpr int round_chunks = 3;

// Bytes of shared memory for the keys and values of `chunks` 64-key chunks.
constexpr size_t staged_bytes(int64_t chunks) {
  return 2 * static_cast<size_t>(chunks) * chunk_keys * head_size * sizeof(bf16);
}

// One round: the keys key0 .. key0 + 64·Chunks − 1 against this warpgroup's 64 query rows. Scores
// in registers, each row's max over the round folded into the running max (the output and sum so
// far rescaled), numerators rounded to bf16 as A operands, and O += P·V. The values are waited for
// at the first round, after its scores (they land while those are computed).
template <int Chunks>
__device__ __forceinline__ void attend_round(WarpgroupMma& mma, AsyncCopies& copies, bool& values_ready,
                                             uint32_t (&q)[head_size / 16][4], const bf16* keys,
                                             const bf16* values, int key0, int64_t tokens, float scale_log2,
                                             int t, float (&running_max)[2], float (&running_sum)[2],
                                             float (&out)[32]) {
  constexpr int k_steps = head_size / 16;
  float scores[Chunks][32];
  MCDL_UNROLL
  for (int c = 0; c < Chunks; ++c)
    MCDL_UNROLL
    for (int i = 0; i < 32; ++i) scores[c][i] = 0.0f;
  MCDL_UNROLL
  for (int c = 0; c < Chunks; ++c) WarpgroupMma::hold(scores[c]);
  MCDL_UNROLL
  for (int s = 0; s < k_steps; ++s) WarpgroupMma::hold(q[s]);
  mma.fence();
  MCDL_UNROLL
  for (int c = 0; c < Chunks; ++c)
    MCDL_UNROLL
    for (int s = 0; s < k_steps; ++s) {
      // Keys key0 + 64c .. + 63 (N), dimensions 16s .. 16s + 15 (K): K-major, a core row along K.
      const uint64_t b_desc = shared_matrix_descriptor(keys + staged_offset(key0 + chunk_keys * c, 16 * s),
                                                       core_bytes, key_group_bytes);
      mma.m64n64k16<false>(scores[c], q[s], b_desc, s > 0);
    }
  mma.commit();
  mma.wait<0>();
  MCDL_UNROLL
  for (int c = 0; c < Chunks; ++c) WarpgroupMma::hold(scores[c]);

  // Row g's scores are scores[c][4i], [4i+1] (key key0 + 64c + 8i + 2t, + 1); row g + 8's [4i+2], [4i+3].
  float round_max[2] = {-INFINITY, -INFINITY};
  MCDL_UNROLL
  for (int c = 0; c < Chunks; ++c)
    MCDL_UNROLL
    for (int i = 0; i < 32; ++i) {
      const int key = key0 + chunk_keys * c + 8 * (i / 4) + 2 * t + i % 2;
      scores[c][i] = key < tokens ? scores[c][i] * scale_log2 : -INFINITY;
      round_max[i % 4 / 2] = fmaxf(round_max[i % 4 / 2], scores[c][i]);
    }
  MCDL_UNROLL
  for (int r = 0; r < 2; ++r) {
    round_max[r] = fmaxf(round_max[r], __shfl_xor_sync(full_warp, round_max[r], 1));
    round_max[r] = fmaxf(round_max[r], __shfl_xor_sync(full_warp, round_max[r], 2));
    // Every round has a key before the last token, so the max is finite; the first round's
    // rescale is exp2(−∞) = 0 of a zero output and sum.
    const float new_max = fmaxf(running_max[r], round_max[r]);
    const float rescale = exp2f(running_max[r] - new_max);
    running_max[r] = new_max;
    running_sum[r] *= rescale;
    MCDL_UNROLL
    for (int n = 0; n < 8; ++n) out[4 * n + 2 * r] *= rescale, out[4 * n + 2 * r + 1] *= rescale;
  }
  // P = exp2(scale·log2(e)·S − max), rounded to bf16 as the A operand of 16 keys each: keys
  // 16u .. 16u + 15 of the round are chunk u / 4's 8-key tiles 2(u % 4) and 2(u % 4) + 1.
  uint32_t p[Chunks * 4][4];
  MCDL_UNROLL
  for (int c = 0; c < Chunks; ++c)
    MCDL_UNROLL
    for (int i = 0; i < 32; ++i) {
      scores[c][i] = exp2f(scores[c][i] - running_max[i % 4 / 2]);  // 0 past the last token
      running_sum[i % 4 / 2] += scores[c][i];
    }
  MCDL_UNROLL
  for (int u = 0; u < Chunks * 4; ++u) {
    const float* tiles = scores[u / 4] + 8 * (u % 4);  // tile 2(u % 4) at [0, 4), the next at [4, 8)
    p[u][0] = pack_bf16x2(tiles[0], tiles[1]);
    p[u][1] = pack_bf16x2(tiles[2], tiles[3]);
    p[u][2] = pack_bf16x2(tiles[4], tiles[5]);
    p[u][3] = pack_bf16x2(tiles[6], tiles[7]);
  }

  if (!values_ready) {  // the same for every thread
    copies.wait<0>();
    mma.publish_shared_writes();
    __syncthreads();  // every thread's values have landed, visible to the products
    values_ready = true;
  }
  WarpgroupMma::hold(out);
  MCDL_UNROLL
  for (int u = 0; u < Chunks * 4; ++u) WarpgroupMma::hold(p[u]);
  mma.fence();
  MCDL_UNROLL
  for (int u = 0; u < Chunks * 4; ++u) {
    // Every step, those past the last token included (their numerators and values are zeros):
    // a branch between the products would make ptxas serialize them.
    // Keys key0 + 16u .. + 15 (K), all 64 dimensions (N): MN-major, a core row along N.
    const uint64_t b_desc =
        shared_matrix_descriptor(values + staged_offset(key0 + 16 * u, 0), key_group_bytes, core_bytes);
    mma.m64n64k16<true>(out, p[u], b_desc, true);
  }
  mma.commit();
  mma.wait<0>();
  WarpgroupMma::hold(out);
}

// qkv [B, T, 3, H, 64] → context [B, T, H, 64]; block x covers head x / query_groups (b·H + h) and
// its query rows from (x % query_groups)·64 on. The keys come in `full_rounds` rounds of
// RoundChunks 64-key chunks (none when RoundChunks is 0), then one of LastChunks.
template <int RoundChunks, int LastChunks>
__global__ void __launch_bounds__(128)
    attention_bf16_wgmma_kernel(const bf16* __restrict__ qkv, bf16* __restrict__ context, int64_t tokens,
                                int64_t heads, int64_t query_groups, int full_rounds, float scale_log2) {
  constexpr int k_steps = head_size / 16;
  const int last_key0 = full_rounds * RoundChunks * chunk_keys, staged_keys = last_key0 + LastChunks * chunk_keys;
  MCDL_DYNAMIC_SHARED(unsigned char, shared);
  bf16* const keys = reinterpret_cast<bf16*>(shared);
  bf16* const values = keys + staged_keys * head_size;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;

  const HeadOperands<head_size> head(qkv, tokens, heads, blockIdx.x / query_groups);
  const int64_t first_query = blockIdx.x % query_groups * block_rows + warp * 16;

  // Every key, then every value, as two groups of 16-byte copies, zeros past the last token.
  // Eight consecutive threads fill one core matrix's 128 bytes.
  AsyncCopies copies;
  const auto stage = [&](bf16* tile, const bf16* source) {
    for (int i = static_cast<int>(threadIdx.x); i < staged_keys * 8; i += static_cast<int>(blockDim.x)) {
      const int key = i / 64 * 8 + i % 8, dim = i / 8 % 8 * 8;
      const bool valid = key < tokens;
      copies.copy16(tile + staged_offset(key, dim), source + (valid ? key : 0) * head.row_stride + dim, valid);
    }
    copies.commit();
  };
  stage(keys, head.k);
  stage(values, head.v);

  // Q as A operands, this warp's 16 rows (zeros past the last token).
  uint32_t q[k_steps][4];
  load_query_fragments<head_size>(q, head, first_query, tokens, g, t);

  WarpgroupMma mma;
  copies.wait<1>();
  mma.publish_shared_writes();
  __syncthreads();  // every thread's keys have landed, visible to the products
  float running_max[2] = {-INFINITY, -INFINITY}, running_sum[2] = {0.0f, 0.0f}, out[32];
  MCDL_UNROLL
  for (int i = 0; i < 32; ++i) out[i] = 0.0f;
  bool values_ready = false;
  if constexpr (RoundChunks > 0)
    for (int round = 0; round < full_rounds; ++round)
      attend_round<RoundChunks>(mma, copies, values_ready, q, keys, values, round * RoundChunks * chunk_keys, tokens,
                                scale_log2, t, running_max, running_sum, out);
  attend_round<LastChunks>(mma, copies, values_ready, q, keys, values, last_key0, tokens, scale_log2, t, running_max,
                           running_sum, out);

  // context = O / sum, each lane's two columns of each 8-column tile as one 32-bit store.
  MCDL_UNROLL
  for (int r = 0; r < 2; ++r) {
    running_sum[r] += __shfl_xor_sync(full_warp, running_sum[r], 1);
    running_sum[r] += __shfl_xor_sync(full_warp, running_sum[r], 2);
    const int64_t row = first_query + g + 8 * r;
    if (row < tokens) store_context_row<head_size>(context, head, tokens, row, out, r, 1.0f / running_sum[r], t);
  }
}

template <int RoundChunks, int LastChunks>
void launch_attention_bf16_wgmma(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                                 int full_rounds, float scale) {
  // Above 48 KB of shared memory a kernel needs the device's leave, once per process: for the most
  // any call may stage.
  static const bool granted = [] {
    MCDL_CUDA_CHECK(cudaFuncSetAttribute(attention_bf16_wgmma_kernel<RoundChunks, LastChunks>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(staged_bytes(wgmma_attention_max_tokens / chunk_keys))));
    return true;
  }();
  (void)granted;
  const int64_t query_groups = (tokens + block_rows - 1) / block_rows;
  launch(attention_bf16_wgmma_kernel<RoundChunks, LastChunks>,
         dim3(static_cast<unsigned>(batch * heads * query_groups)), dim3(128),
         staged_bytes(full_rounds * RoundChunks + LastChunks), engine_stream(), qkv, context, tokens, heads,
         query_groups, full_rounds, scale * attention_log2_e);
}

bool device_is_hopper() {
  static const bool hopper = [] {
    cudaDeviceProp prop;
    return cudaGetDeviceProperties(&prop, 0) == cudaSuccess && prop.major == 9 && prop.minor == 0;
  }();
  return hopper;
}

}  // namespace

bool attention_bf16_wgmma_supported(const bf16* qkv, const bf16* context, int64_t tokens, int64_t head_dim,
                                    std::string* why) {
  const auto refuse = [why](const std::string& reason) {
    if (why != nullptr) *why = "the wgmma attention " + reason;
    return false;
  };
  if (!device_is_hopper()) return refuse("needs a compute capability 9.0 GPU (H100, H200)");
  if (head_dim != head_size) return refuse("takes head size 64, got " + std::to_string(head_dim));
  if (tokens > wgmma_attention_max_tokens)
    return refuse("takes at most " + std::to_string(wgmma_attention_max_tokens) + " tokens, got " +
                  std::to_string(tokens));
  // At head size 64, what the fused kernels require of the buffers: 16-byte alignment.
  if (!attention_bf16_fuses(qkv, context, head_dim)) return refuse("needs 16-byte aligned buffers");
  return true;
}

void attention_bf16_wgmma(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                          int64_t head_dim, float scale) {
  std::string why;
  if (!attention_bf16_wgmma_supported(qkv, context, tokens, head_dim, &why)) throw std::invalid_argument(why);
  if (batch * heads == 0 || tokens == 0) return;
  const int chunks = static_cast<int>((tokens + chunk_keys - 1) / chunk_keys);
  if (chunks <= single_round_chunks) {
    switch (chunks) {
      case 1:
        return launch_attention_bf16_wgmma<0, 1>(qkv, context, batch, tokens, heads, 0, scale);
      case 2:
        return launch_attention_bf16_wgmma<0, 2>(qkv, context, batch, tokens, heads, 0, scale);
      case 3:
        return launch_attention_bf16_wgmma<0, 3>(qkv, context, batch, tokens, heads, 0, scale);
      default:
        return launch_attention_bf16_wgmma<0, 4>(qkv, context, batch, tokens, heads, 0, scale);
    }
  }
  const int full_rounds = (chunks - 1) / round_chunks;  // and a last round of 1 to 3 chunks
  switch (chunks - full_rounds * round_chunks) {
    case 1:
      return launch_attention_bf16_wgmma<round_chunks, 1>(qkv, context, batch, tokens, heads, full_rounds, scale);
    case 2:
      return launch_attention_bf16_wgmma<round_chunks, 2>(qkv, context, batch, tokens, heads, full_rounds, scale);
    default:
      return launch_attention_bf16_wgmma<round_chunks, 3>(qkv, context, batch, tokens, heads, full_rounds, scale);
  }
}

}  // namespace mcdl::cuda
