#include "kernels/cuda/bf16_inference.h"

#include <string>
#include <type_traits>

#include "kernels/cuda/async_copy.h"
#include "kernels/cuda/attention_fragments.h"
#include "kernels/cuda/block_reduce.h"
#include "kernels/cuda/device_math.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/mma.h"
#include "kernels/cuda/row_kernels.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/wmma.h"

namespace mcdl::cuda {
namespace {

__device__ __forceinline__ float value_of(bf16 v) { return static_cast<float>(v); }

// Eight bf16 values that load and store as one 16-byte access.
struct alignas(16) Bf16x8 {
  bf16 v[8];
};

// A warp per row of d = 8·packs elements (16-byte aligned rows, gamma and beta too), read once in
// packs of eight into registers, up to MaxPacks packs per lane (768 elements: three): mean and
// variance from the registers (two passes, no cancellation), then the row written in packs. A
// lane reads its eight gammas and betas as two 16-byte packs each: read one float at a time, a
// warp's loads touched eight cache lines per instruction, 48 instructions a row, which cost
// the L1 more cycles than the row's own bytes.
template <int MaxPacks>
__global__ void layer_norm_bf16_packed_kernel(const bf16* x, const float* gamma, const float* beta, bf16* y,
                                              int64_t rows, int64_t d, float eps) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t packs = d / 8;
  for (int64_t r = warp_row_first(); r < rows; r += warp_row_stride()) {
    const Bf16x8* xr = reinterpret_cast<const Bf16x8*>(x + r * d);
    float v[MaxPacks][8];
    float sum = 0;
    MCDL_UNROLL
    for (int i = 0; i < MaxPacks; ++i) {
      const int64_t p = lane + 32 * i;
      if (p >= packs) break;
      const Bf16x8 pack = xr[p];
      MCDL_UNROLL
      for (int e = 0; e < 8; ++e) {
        v[i][e] = value_of(pack.v[e]);
        sum += v[i][e];
      }
    }
    const float mean = warp_all_sum(sum) / static_cast<float>(d);
    float squares = 0;
    MCDL_UNROLL
    for (int i = 0; i < MaxPacks; ++i) {
      if (lane + 32 * i >= packs) break;
      MCDL_UNROLL
      for (int e = 0; e < 8; ++e) squares += (v[i][e] - mean) * (v[i][e] - mean);
    }
    const float rstd = 1.0f / sqrtf(warp_all_sum(squares) / static_cast<float>(d) + eps);
    MCDL_UNROLL
    for (int i = 0; i < MaxPacks; ++i) {
      const int64_t p = lane + 32 * i;
      if (p >= packs) break;
      const Pack<float, 4> g[2] = {load_pack<4>(gamma + 8 * p), load_pack<4>(gamma + 8 * p + 4)};
      const Pack<float, 4> b[2] = {load_pack<4>(beta + 8 * p), load_pack<4>(beta + 8 * p + 4)};
      Bf16x8 out;
      MCDL_UNROLL
      for (int e = 0; e < 8; ++e) out.v[e] = bf16((v[i][e] - mean) * rstd * g[e / 4].v[e % 4] + b[e / 4].v[e % 4]);
      reinterpret_cast<Bf16x8*>(y + r * d)[p] = out;
    }
  }
}
constexpr int64_t layer_norm_max_packs = 4;  // rows of up to 1,024 elements go in registers

// Any other row: a warp per row, elements one by one, the row read from L1 on its later passes.
__global__ void layer_norm_bf16_kernel(const bf16* x, const float* gamma, const float* beta, bf16* y, int64_t rows,
                                       int64_t d, float eps) {
  const int64_t lane = threadIdx.x % 32;
  for (int64_t r = warp_row_first(); r < rows; r += warp_row_stride()) {
    const bf16* xr = x + r * d;
    bf16* yr = y + r * d;
    float sum = 0;
    for (int64_t c = lane; c < d; c += 32) sum += value_of(xr[c]);
    const float mean = warp_all_sum(sum) / static_cast<float>(d);
    float squares = 0;  // two passes: no cancellation for rows with a large mean
    for (int64_t c = lane; c < d; c += 32) {
      const float centred = value_of(xr[c]) - mean;
      squares += centred * centred;
    }
    const float rstd = 1.0f / sqrtf(warp_all_sum(squares) / static_cast<float>(d) + eps);
    for (int64_t c = lane; c < d; c += 32) yr[c] = bf16((value_of(xr[c]) - mean) * rstd * gamma[c] + beta[c]);
  }
}


template <GeluForm form>
__device__ __forceinline__ bf16 gelu_of(bf16 x) {
  const float v = value_of(x);
  if constexpr (form == GeluForm::tanh) return bf16(gelu_tanh(v));
  else return bf16(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
}

// With `packed`, n / 8 packs of eight (the buffers 16-byte aligned), then the tail one by one.
template <GeluForm form>
__global__ void gelu_bf16_kernel(const bf16* x, bf16* y, int64_t n, bool packed) {
  const int64_t packs = packed ? n / 8 : 0;
  for (int64_t i = grid_index(); i < packs; i += grid_stride()) {
    Bf16x8 pack = reinterpret_cast<const Bf16x8*>(x)[i];
    MCDL_UNROLL
    for (int j = 0; j < 8; ++j) pack.v[j] = gelu_of<form>(pack.v[j]);
    reinterpret_cast<Bf16x8*>(y)[i] = pack;
  }
  for (int64_t i = packs * 8 + grid_index(); i < n; i += grid_stride()) y[i] = gelu_of<form>(x[i]);
}

// The (batch, head) matrices of attention_bf16 as cuBLAS's pointer arrays: q, k and v inside
// qkv [B, T, 3, H, hd], the scores [B·H, T, T], the context [B, T, H, hd].
__global__ void head_pointers_kernel(const bf16* qkv, bf16* scores, bf16* context, int64_t batch_heads,
                                     int64_t tokens, int64_t heads, int64_t head_dim, const bf16** q, const bf16** k,
                                     const bf16** v, bf16** s, bf16** c) {
  for (int64_t i = grid_index(); i < batch_heads; i += grid_stride()) {
    const int64_t b = i / heads, h = i % heads, width = heads * head_dim;
    const bf16* first = qkv + b * tokens * 3 * width + h * head_dim;
    q[i] = first;
    k[i] = first + width;
    v[i] = first + 2 * width;
    s[i] = scores + i * tokens * tokens;
    c[i] = context + b * tokens * width + h * head_dim;
  }
}

__global__ void softmax_bf16_kernel(const bf16* x, bf16* y, int64_t rows, int64_t d) {
  const int64_t lane = threadIdx.x % 32;
  for (int64_t r = warp_row_first(); r < rows; r += warp_row_stride()) {
    const bf16* xr = x + r * d;
    bf16* yr = y + r * d;
    float top = -INFINITY;
    for (int64_t c = lane; c < d; c += 32) top = fmaxf(top, value_of(xr[c]));
    top = warp_all_max(top);
    float sum = 0;
    for (int64_t c = lane; c < d; c += 32) sum += expf(value_of(xr[c]) - top);
    const float inverse = 1.0f / warp_all_sum(sum);
    for (int64_t c = lane; c < d; c += 32) yr[c] = bf16(expf(value_of(xr[c]) - top) * inverse);
  }
}

// ---- The fused attention (attention_bf16) ----
// One warp per 16 query rows, up to attention_max_warps of them per block, all of one (batch,
// head). The block stages the head's keys and values in shared memory attention_keys at a time;
// each warp multiplies its queries (held as WMMA fragments) with them on the tensor cores and
// runs flash attention's online softmax: per step, the scores S = Q·Kᵀ (fp32) go to the warp's
// shared scratch, two lanes per row update the row's running max and sum and write the
// numerators P = exp(scale·S − max) rounded to bf16, the output accumulators are rescaled by
// exp(old max − new max) and O += P·V. Nothing of size T×T leaves the block.
//
// WMMA does not say which row an accumulator element belongs to, so the rescale looks each
// element's row up: every warp loads a 16×16 matrix whose elements are their row numbers into an
// accumulator once, and element i of any accumulator then lies in row row_of[i].
namespace wmma = nvcuda::wmma;
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

constexpr int attention_keys = 64;      // keys (and values) staged per step
constexpr int attention_max_warps = 4;  // 45 KB of shared memory at head_dim 64: under 48 KB

// Shared memory in bytes: the staged keys and values, then per warp its scores (also its staged
// queries, and its output at the end), its numerators (also the row-number matrix) and one float
// per row. Padded rows shift consecutive rows across banks; every WMMA tile starts 32-byte aligned.
template <int HD>
struct AttentionLayout {
  static constexpr int ld_kv = HD + 8;                                            // bf16
  static constexpr int ld_s = (attention_keys > HD ? attention_keys : HD) + 4;    // floats
  static constexpr int ld_p = attention_keys + 8;                                 // bf16
  static constexpr int ld_q = HD + 8;                                             // bf16
  static constexpr size_t kv_bytes = attention_keys * ld_kv * sizeof(bf16);
  static constexpr size_t s_bytes = 16 * ld_s * sizeof(float), p_bytes = 16 * ld_p * sizeof(bf16);
  static constexpr size_t warp_bytes = s_bytes + p_bytes + 16 * sizeof(float);
  static_assert(kv_bytes % 32 == 0 && s_bytes % 32 == 0 && p_bytes % 32 == 0 && warp_bytes % 32 == 0);
  static_assert(16 * ld_q * sizeof(bf16) <= s_bytes && 16 * 16 * sizeof(float) <= p_bytes);
  static size_t bytes(int warps) { return 2 * kv_bytes + static_cast<size_t>(warps) * warp_bytes; }
};

// qkv [B, T, 3, H, HD] → context [B, T, H, HD]; block x covers head x / query_groups (b·H + h)
// and its query tiles from (x % query_groups)·warps on.
template <int HD>
__global__ void __launch_bounds__(32 * attention_max_warps)
    attention_bf16_kernel(const bf16* __restrict__ qkv, bf16* __restrict__ context, int64_t tokens, int64_t heads,
                          int64_t query_groups, float scale_log2) {
  using Layout = AttentionLayout<HD>;
  constexpr int d_tiles = HD / 16, step_tiles = attention_keys / 16, packs = HD / 8;
  constexpr int elements = Accumulator::num_elements;
  MCDL_DYNAMIC_SHARED(unsigned char, shared);
  bf16* keys = reinterpret_cast<bf16*>(shared);
  bf16* values = reinterpret_cast<bf16*>(shared + Layout::kv_bytes);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  unsigned char* own = shared + 2 * Layout::kv_bytes + warp * Layout::warp_bytes;
  float* scores = reinterpret_cast<float*>(own);
  bf16* numerators = reinterpret_cast<bf16*>(own + Layout::s_bytes);
  float* row_factor = reinterpret_cast<float*>(own + Layout::s_bytes + Layout::p_bytes);

  const int64_t head = blockIdx.x / query_groups, b = head / heads, h = head % heads;
  const int64_t row_stride = 3 * heads * HD;
  const bf16* q_first = qkv + b * tokens * row_stride + h * HD;
  const bf16* k_first = q_first + heads * HD;
  const bf16* v_first = q_first + 2 * heads * HD;
  const int64_t first_query = (blockIdx.x % query_groups * (blockDim.x / 32) + warp) * 16;
  const bool active = first_query < tokens;  // the last block's spare warps only help staging

  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> q[d_tiles];
  Accumulator out[d_tiles];
  int row_of[elements] = {};
  if (active) {
    bf16* staged = reinterpret_cast<bf16*>(scores);
    for (int i = lane; i < 16 * packs; i += 32) {
      const int r = i / packs, p = i % packs;
      Bf16x8 pack{};  // zero rows past the last token
      if (first_query + r < tokens) pack = reinterpret_cast<const Bf16x8*>(q_first + (first_query + r) * row_stride)[p];
      reinterpret_cast<Bf16x8*>(staged + r * Layout::ld_q)[p] = pack;
    }
    float* row_numbers = reinterpret_cast<float*>(numerators);
    for (int i = lane; i < 256; i += 32) row_numbers[i] = static_cast<float>(i / 16);
    __syncwarp();
    MCDL_UNROLL
    for (int t = 0; t < d_tiles; ++t) {
      wmma::load_matrix_sync(q[t], as_wmma(staged + 16 * t), Layout::ld_q);
      wmma::fill_fragment(out[t], 0.0f);
    }
    Accumulator rows;
    wmma::load_matrix_sync(rows, row_numbers, 16, wmma::mem_row_major);
    MCDL_UNROLL
    for (int i = 0; i < elements; ++i) row_of[i] = static_cast<int>(rows.x[i]);
    __syncwarp();  // the scratch is reused below
  }

  // Two lanes per row for the softmax, each taking every other column.
  const int row = lane / 2, half = lane % 2;
  const float* score_row = scores + row * Layout::ld_s;
  bf16* numerator_row = numerators + row * Layout::ld_p;
  float running_max = -INFINITY, running_sum = 0.0f;
  for (int64_t key0 = 0; key0 < tokens; key0 += attention_keys) {
    const int valid = static_cast<int>(tokens - key0 < attention_keys ? tokens - key0 : attention_keys);
    __syncthreads();  // every warp is done with the previous keys and values
    for (int i = static_cast<int>(threadIdx.x); i < attention_keys * packs; i += static_cast<int>(blockDim.x)) {
      const int r = i / packs, p = i % packs;
      Bf16x8 k{}, v{};  // zero rows past the last token: masked scores, and no NaN from stale values
      if (r < valid) {
        k = reinterpret_cast<const Bf16x8*>(k_first + (key0 + r) * row_stride)[p];
        v = reinterpret_cast<const Bf16x8*>(v_first + (key0 + r) * row_stride)[p];
      }
      reinterpret_cast<Bf16x8*>(keys + r * Layout::ld_kv)[p] = k;
      reinterpret_cast<Bf16x8*>(values + r * Layout::ld_kv)[p] = v;
    }
    __syncthreads();
    if (!active) continue;
    const int tiles = (valid + 15) / 16;

    MCDL_UNROLL
    for (int j = 0; j < step_tiles; ++j) {
      if (j >= tiles) break;
      Accumulator s;
      wmma::fill_fragment(s, 0.0f);
      MCDL_UNROLL
      for (int t = 0; t < d_tiles; ++t) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> k;  // Kᵀ
        wmma::load_matrix_sync(k, as_wmma(keys + 16 * j * Layout::ld_kv + 16 * t), Layout::ld_kv);
        wmma::mma_sync(s, q[t], k, s);
      }
      wmma::store_matrix_sync(scores + 16 * j, s, Layout::ld_s, wmma::mem_row_major);
    }
    __syncwarp();

    float step_max = -INFINITY;
    for (int c = half; c < valid; c += 2) step_max = fmaxf(step_max, score_row[c] * scale_log2);
    const float new_max = fmaxf(running_max, fmaxf(step_max, __shfl_xor_sync(full_warp, step_max, 1)));
    float step_sum = 0.0f;
    for (int c = half; c < 16 * tiles; c += 2) {
      const float numerator = c < valid ? exp2f(score_row[c] * scale_log2 - new_max) : 0.0f;
      numerator_row[c] = bf16(numerator);
      step_sum += numerator;
    }
    const float rescale = exp2f(running_max - new_max);  // 0 at the first step
    running_sum = running_sum * rescale + step_sum + __shfl_xor_sync(full_warp, step_sum, 1);
    running_max = new_max;
    if (half == 0) row_factor[row] = rescale;
    __syncwarp();

    float factor[elements];
    MCDL_UNROLL
    for (int i = 0; i < elements; ++i) factor[i] = row_factor[row_of[i]];
    MCDL_UNROLL
    for (int t = 0; t < d_tiles; ++t) {
      MCDL_UNROLL
      for (int i = 0; i < elements; ++i) out[t].x[i] *= factor[i];
    }
    MCDL_UNROLL
    for (int j = 0; j < step_tiles; ++j) {
      if (j >= tiles) break;
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> p;
      wmma::load_matrix_sync(p, as_wmma(numerators + 16 * j), Layout::ld_p);
      MCDL_UNROLL
      for (int t = 0; t < d_tiles; ++t) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> v;
        wmma::load_matrix_sync(v, as_wmma(values + 16 * j * Layout::ld_kv + 16 * t), Layout::ld_kv);
        wmma::mma_sync(out[t], p, v, out[t]);
      }
    }
  }
  if (!active) return;

  // context = out / sum, through the scores scratch.
  __syncwarp();  // every lane has read its factors
  if (half == 0) row_factor[row] = 1.0f / running_sum;
  MCDL_UNROLL
  for (int t = 0; t < d_tiles; ++t) wmma::store_matrix_sync(scores + 16 * t, out[t], Layout::ld_s, wmma::mem_row_major);
  __syncwarp();
  for (int i = lane; i < 16 * packs; i += 32) {
    const int r = i / packs, p = i % packs;
    if (first_query + r >= tokens) continue;
    const float* o = scores + r * Layout::ld_s + 8 * p;
    Bf16x8 pack;
    MCDL_UNROLL
    for (int e = 0; e < 8; ++e) pack.v[e] = bf16(o[e] * row_factor[r]);
    reinterpret_cast<Bf16x8*>(context + ((b * tokens + first_query + r) * heads + h) * HD)[p] = pack;
  }
}

template <int HD>
void launch_attention_bf16(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                           float scale) {
  const int warps = std::clamp<int>(static_cast<int>(block_size(32 * attention_max_warps) / 32), 1,
                                    attention_max_warps);
  const int64_t query_groups = ((tokens + 15) / 16 + warps - 1) / warps;
  launch(attention_bf16_kernel<HD>, dim3(static_cast<unsigned>(batch * heads * query_groups)), dim3(32 * warps),
         AttentionLayout<HD>::bytes(warps), engine_stream(), qkv, context, tokens, heads, query_groups,
         scale * attention_log2_e);
}

// ---- The register-resident attention (attention_bf16_flash) ----
// FlashAttention-2's arrangement on mma.sync (kernels/cuda/mma.h), whose register layout is
// documented: a warp owns 32 query rows, two 16-row tiles held as A operands, so that every key
// and value fragment it loads from shared memory serves two products. For each step of 64 keys
// the scores S = Q·Kᵀ stay in the warp's registers as 16×8 accumulators; each row's max and sum
// are taken across the four lanes that hold it; the numerators P = exp(scale·S − max), rounded to
// bf16, become the A operand of O += P·V in place; and the output accumulators are rescaled row by
// row in registers. The block's threads stage the keys and the values row by row in shared memory
// with asynchronous copies (kernels/cuda/async_copy.h), the next step's while the warps compute on
// this one (two buffers); ldmatrix reads the key fragments as they lie and the value fragments
// transposed, so nothing is transposed on the way in.
constexpr int flash_keys = 64;        // keys staged per step: eight 8-key tiles of scores
constexpr int flash_warps = 4;
constexpr int flash_query_tiles = 2;  // 16-row tiles of queries per warp
constexpr int flash_block_rows = 16 * flash_query_tiles * flash_warps;  // query rows per block: 128

template <int HD>
struct FlashLayout {
  static constexpr int ld = HD + 8;  // bf16 per staged row: ldmatrix's eight row addresses hit distinct banks
  static constexpr int tile = flash_keys * ld;               // bf16 per staged tile (keys or values)
  static constexpr size_t bytes = 2 * 2 * tile * sizeof(bf16);  // two buffers of keys and values
};

// qkv [B, T, 3, H, HD] → context [B, T, H, HD]; block x covers head x / query_groups (b·H + h)
// and its query rows from (x % query_groups)·128 on.
template <int HD>
__global__ void __launch_bounds__(32 * flash_warps)
    attention_bf16_flash_kernel(const bf16* __restrict__ qkv, bf16* __restrict__ context, int64_t tokens,
                                int64_t heads, int64_t query_groups, float scale_log2) {
  using Layout = FlashLayout<HD>;
  constexpr int k_steps = HD / 16, out_tiles = HD / 8, score_tiles = flash_keys / 8, packs = HD / 8;
  constexpr int mt = flash_query_tiles;
  MCDL_DYNAMIC_SHARED(unsigned char, shared);
  bf16* const staged = reinterpret_cast<bf16*>(shared);  // [buffer][keys, values][flash_keys][ld]
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;

  const HeadOperands<HD> head(qkv, tokens, heads, blockIdx.x / query_groups);
  const int64_t first_query = blockIdx.x % query_groups * flash_block_rows + warp * 16 * mt;
  // Query tiles past the last token are skipped (warp-uniform), a warp with none only stages.
  const int64_t rows_left = tokens - first_query;
  const int tiles = rows_left <= 0 ? 0 : static_cast<int>(rows_left >= 16 * mt ? mt : (rows_left + 15) / 16);

  AsyncCopies copies;
  // Stages keys and values key0 .. key0 + 63 into `buffer`, zeros past the last token.
  const auto stage = [&](int buffer, int64_t key0) {
    bf16* keys = staged + buffer * 2 * Layout::tile;
    bf16* values = keys + Layout::tile;
    for (int i = static_cast<int>(threadIdx.x); i < flash_keys * packs; i += static_cast<int>(blockDim.x)) {
      const int r = i / packs, p = i % packs;
      const bool valid = key0 + r < tokens;
      const int64_t row = valid ? key0 + r : 0;  // a zero-filled row reads nothing, but points in bounds
      copies.copy16(keys + r * Layout::ld + 8 * p, head.k + row * head.row_stride + 8 * p, valid);
      copies.copy16(values + r * Layout::ld + 8 * p, head.v + row * head.row_stride + 8 * p, valid);
    }
    copies.commit();
  };
  stage(0, 0);

  // Q as A operands, read once (zero rows past the last token).
  uint32_t q[mt][k_steps][4];
  MCDL_UNROLL
  for (int m = 0; m < mt; ++m) load_query_fragments<HD>(q[m], head, first_query + 16 * m, tokens, g, t);
  float out[mt][out_tiles][4];
  MCDL_UNROLL
  for (int m = 0; m < mt; ++m)
    MCDL_UNROLL
    for (int n = 0; n < out_tiles; ++n) out[m][n][0] = out[m][n][1] = out[m][n][2] = out[m][n][3] = 0.0f;
  // Per tile and row (g, then g + 8): the running max, and this lane's part of the running sum.
  float running_max[mt][2], running_sum[mt][2];
  MCDL_UNROLL
  for (int m = 0; m < mt; ++m) {
    running_max[m][0] = running_max[m][1] = -INFINITY;
    running_sum[m][0] = running_sum[m][1] = 0.0f;
  }

  const int64_t steps = (tokens + flash_keys - 1) / flash_keys;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t key0 = step * flash_keys;
    const int valid = static_cast<int>(tokens - key0 < flash_keys ? tokens - key0 : flash_keys);
    if (step + 1 < steps) {
      stage(static_cast<int>((step + 1) % 2), key0 + flash_keys);  // its buffer was freed by the last barrier
      copies.wait<1>();
    } else {
      copies.wait<0>();
    }
    __syncthreads();  // this step's keys and values have landed, every thread's
    const bf16* keys = staged + (step % 2) * 2 * Layout::tile;
    const bf16* values = keys + Layout::tile;
    if (tiles > 0) {
      // S = Q·Kᵀ for this step's keys: tile j holds keys 8j..8j+7 (those past `valid` become −∞).
      // Lane l's row address for ldmatrix: key 8j + (l / 8 ≥ 2 ? 8 : 0) + l % 8, at dimension
      // 16s + 8·(l / 8 % 2): matrices 0 and 1 are tile j's two B registers, 2 and 3 tile j + 1's.
      float scores[mt][score_tiles][4];
      MCDL_UNROLL
      for (int m = 0; m < mt; ++m)
        MCDL_UNROLL
        for (int j = 0; j < score_tiles; ++j) scores[m][j][0] = scores[m][j][1] = scores[m][j][2] = scores[m][j][3] = 0.0f;
      const bf16* key_row = keys + (lane % 8 + (lane / 16) * 8) * Layout::ld + (lane / 8 % 2) * 8;
      MCDL_UNROLL
      for (int j = 0; j < score_tiles; j += 2) {
        if (8 * j >= valid) continue;
        MCDL_UNROLL
        for (int s = 0; s < k_steps; ++s) {
          uint32_t kt[4];
          load_matrices_x4(kt, key_row + 8 * j * Layout::ld + 16 * s);
          MCDL_UNROLL
          for (int m = 0; m < mt; ++m)
            if (m < tiles) mma_bf16_16816_pair(scores[m][j], scores[m][j + 1], q[m][s], kt);
        }
      }
      MCDL_UNROLL
      for (int m = 0; m < mt; ++m) {
        if (m >= tiles) continue;
        float step_max[2] = {-INFINITY, -INFINITY};
        MCDL_UNROLL
        for (int j = 0; j < score_tiles; ++j)
          MCDL_UNROLL
          for (int i = 0; i < 4; ++i) {
            const bool masked = 8 * j + 2 * t + (i & 1) >= valid;
            scores[m][j][i] = masked ? -INFINITY : scores[m][j][i] * scale_log2;
            step_max[i / 2] = fmaxf(step_max[i / 2], scores[m][j][i]);
          }
        float rescale[2];
        MCDL_UNROLL
        for (int r = 0; r < 2; ++r) {
          step_max[r] = fmaxf(step_max[r], __shfl_xor_sync(full_warp, step_max[r], 1));
          step_max[r] = fmaxf(step_max[r], __shfl_xor_sync(full_warp, step_max[r], 2));
          const float new_max = fmaxf(running_max[m][r], step_max[r]);  // finite: every step has a valid key
          rescale[r] = exp2f(running_max[m][r] - new_max);                // 0 at the first step
          running_max[m][r] = new_max;
          running_sum[m][r] *= rescale[r];
        }
        MCDL_UNROLL
        for (int n = 0; n < out_tiles; ++n) {
          out[m][n][0] *= rescale[0];
          out[m][n][1] *= rescale[0];
          out[m][n][2] *= rescale[1];
          out[m][n][3] *= rescale[1];
        }
        MCDL_UNROLL
        for (int j = 0; j < score_tiles; ++j)
          MCDL_UNROLL
          for (int i = 0; i < 4; ++i) {
            scores[m][j][i] = exp2f(scores[m][j][i] - running_max[m][i / 2]);  // 0 where masked
            running_sum[m][i / 2] += scores[m][j][i];
          }
      }
      // O += P·V, 16 keys at a time: score tiles 2u and 2u + 1 are the A operand as they lie.
      // Lane l's row address: key 16u + 8·(l / 8 % 2) + l % 8, at dimension 8·(n + l / 16):
      // matrices 0 and 1 are output tile n's two B registers, 2 and 3 tile n + 1's.
      const bf16* value_row = values + (lane % 8 + (lane / 8 % 2) * 8) * Layout::ld + (lane / 16) * 8;
      MCDL_UNROLL
      for (int u = 0; u < score_tiles / 2; ++u) {
        if (16 * u >= valid) continue;
        uint32_t p[mt][4];
        MCDL_UNROLL
        for (int m = 0; m < mt; ++m) {
          p[m][0] = pack_bf16x2(scores[m][2 * u][0], scores[m][2 * u][1]);
          p[m][1] = pack_bf16x2(scores[m][2 * u][2], scores[m][2 * u][3]);
          p[m][2] = pack_bf16x2(scores[m][2 * u + 1][0], scores[m][2 * u + 1][1]);
          p[m][3] = pack_bf16x2(scores[m][2 * u + 1][2], scores[m][2 * u + 1][3]);
        }
        MCDL_UNROLL
        for (int n = 0; n < out_tiles; n += 2) {
          uint32_t v[4];
          load_matrices_x4_transposed(v, value_row + 16 * u * Layout::ld + 8 * n);
          MCDL_UNROLL
          for (int m = 0; m < mt; ++m)
            if (m < tiles) mma_bf16_16816_pair(out[m][n], out[m][n + 1], p[m], v);
        }
      }
    }
    __syncthreads();  // every warp is done with this buffer before the next step refills it
  }
  if (tiles == 0) return;

  // context = O / sum, each lane's two columns of each tile as one 32-bit store.
  MCDL_UNROLL
  for (int m = 0; m < mt; ++m) {
    if (m >= tiles) continue;
    MCDL_UNROLL
    for (int r = 0; r < 2; ++r) {
      running_sum[m][r] += __shfl_xor_sync(full_warp, running_sum[m][r], 1);
      running_sum[m][r] += __shfl_xor_sync(full_warp, running_sum[m][r], 2);
      const int64_t row = first_query + 16 * m + g + 8 * r;
      if (row < tokens) store_context_row<HD>(context, head, tokens, row, &out[m][0][0], r, 1.0f / running_sum[m][r], t);
    }
  }
}

template <int HD>
void launch_attention_bf16_flash(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                                 float scale) {
  const int64_t query_groups = (tokens + flash_block_rows - 1) / flash_block_rows;
  launch(attention_bf16_flash_kernel<HD>, dim3(static_cast<unsigned>(batch * heads * query_groups)),
         dim3(32 * flash_warps), FlashLayout<HD>::bytes, engine_stream(), qkv, context, tokens, heads, query_groups,
         scale * attention_log2_e);
}

__global__ void add_rows_bf16_kernel(bf16* y, const bf16* bias, int64_t rows, int64_t cols) {
  for (int64_t i = grid_index(); i < rows * cols; i += grid_stride()) y[i] = bf16(value_of(y[i]) + value_of(bias[i % cols]));
}

// Warps of 8 per block, a grid-stride loop over rows beyond the grid limit.
dim3 bf16_rows_block() { return dim3(block_size(256)); }
dim3 bf16_rows_grid(int64_t rows) {
  const int64_t warps = bf16_rows_block().x / 32;
  return dim3(static_cast<unsigned>(std::clamp<int64_t>((rows + warps - 1) / warps, 1, 65535)));
}

}  // namespace

void layer_norm_bf16(const bf16* x, const float* gamma, const float* beta, bf16* y, int64_t rows, int64_t d,
                     float eps) {
  if (rows <= 0 || d <= 0) return;
  const bool packed = d % 8 == 0 && d / 8 <= 32 * layer_norm_max_packs && packs_aligned(x, y, gamma, beta);
  if (packed)
    launch(layer_norm_bf16_packed_kernel<layer_norm_max_packs>, bf16_rows_grid(rows), bf16_rows_block(), 0,
           engine_stream(), x, gamma, beta, y, rows, d, eps);
  else
    launch(layer_norm_bf16_kernel, bf16_rows_grid(rows), bf16_rows_block(), 0, engine_stream(), x, gamma, beta, y,
           rows, d, eps);
}

namespace {
template <GeluForm form>
void launch_gelu_bf16(const bf16* x, bf16* y, int64_t n) {
  if (n <= 0) return;
  // Engine buffers are 256-byte aligned; a view that is not goes one by one.
  const bool packed = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  launch(gelu_bf16_kernel<form>, elementwise_grid(packed ? (n + 7) / 8 : n), dim3(elementwise_block()), 0,
         engine_stream(), x, y, n, packed);
}
}  // namespace

void gelu_bf16(const bf16* x, bf16* y, int64_t n) { launch_gelu_bf16<GeluForm::erf>(x, y, n); }

void gelu_tanh_bf16(const bf16* x, bf16* y, int64_t n) { launch_gelu_bf16<GeluForm::tanh>(x, y, n); }

bool attention_bf16_fuses(const bf16* qkv, const bf16* context, int64_t head_dim) {
  const auto aligned = [](const bf16* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return head_dim % 16 == 0 && head_dim >= 16 && head_dim <= 64 && aligned(qkv) && aligned(context);
}

namespace {

// launch(std::integral_constant<int, HD>{}) for the head size of a fused kernel (`name`), after
// checking that the kernels take it; nothing for an empty input.
template <class Launch>
void with_fused_head_dim(const char* name, const bf16* qkv, const bf16* context, int64_t batch, int64_t tokens,
                         int64_t heads, int64_t head_dim, Launch launch) {
  if (!attention_bf16_fuses(qkv, context, head_dim))
    throw std::invalid_argument(std::string(name) + ": takes a head size of 16, 32, 48 or 64 and 16-byte aligned " +
                                "buffers, got head_dim " + std::to_string(head_dim));
  if (batch * heads == 0 || tokens == 0) return;
  switch (head_dim) {
    case 16:
      return launch(std::integral_constant<int, 16>{});
    case 32:
      return launch(std::integral_constant<int, 32>{});
    case 48:
      return launch(std::integral_constant<int, 48>{});
    default:
      return launch(std::integral_constant<int, 64>{});
  }
}

}  // namespace

void attention_bf16(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim,
                    float scale) {
  with_fused_head_dim("attention_bf16", qkv, context, batch, tokens, heads, head_dim, [&](auto hd) {
    launch_attention_bf16<decltype(hd)::value>(qkv, context, batch, tokens, heads, scale);
  });
}

void attention_bf16_flash(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                          int64_t head_dim, float scale) {
  with_fused_head_dim("attention_bf16_flash", qkv, context, batch, tokens, heads, head_dim, [&](auto hd) {
    launch_attention_bf16_flash<decltype(hd)::value>(qkv, context, batch, tokens, heads, scale);
  });
}

void attention_bf16_unfused(const bf16* qkv, bf16* scores, bf16* context, int64_t batch, int64_t tokens,
                            int64_t heads, int64_t head_dim, float scale) {
  const int64_t bh = batch * heads, ld_qkv = 3 * heads * head_dim;
  if (bh == 0 || tokens == 0) return;
  // One allocation for the five arrays of bh pointers: q, k, v, scores, context.
  char* arrays = static_cast<char*>(device_alloc(static_cast<size_t>(5 * bh) * sizeof(void*)));
  auto array = [&](int i) -> void* { return arrays + static_cast<size_t>(i * bh) * sizeof(void*); };
  const auto q = static_cast<const bf16**>(array(0)), k = static_cast<const bf16**>(array(1)),
             v = static_cast<const bf16**>(array(2));
  const auto s = static_cast<bf16**>(array(3)), c = static_cast<bf16**>(array(4));
  launch(head_pointers_kernel, elementwise_grid(bh), dim3(elementwise_block()), 0, engine_stream(), qkv, scores,
         context, bh, tokens, heads, head_dim, q, k, v, s, c);
  // PyTorch: attn = (q @ k.transpose(-2, -1)) * scale, softmax over keys, then attn @ v; the scale
  // is the first product's alpha, the softmax runs in place.
  gemm_bf16_pointers(false, true, tokens, tokens, head_dim, scale, q, ld_qkv, k, ld_qkv, s, tokens, bh);
  softmax_bf16(scores, scores, bh * tokens, tokens);
  gemm_bf16_pointers(false, false, tokens, head_dim, tokens, 1.0f, s, tokens, v, ld_qkv, c, heads * head_dim, bh);
  device_free(arrays);
}

void softmax_bf16(const bf16* x, bf16* y, int64_t rows, int64_t d) {
  if (rows > 0 && d > 0)
    launch(softmax_bf16_kernel, bf16_rows_grid(rows), bf16_rows_block(), 0, engine_stream(), x, y, rows, d);
}

void add_rows_bf16(bf16* y, const bf16* bias, int64_t rows, int64_t cols) {
  if (rows * cols > 0)
    launch(add_rows_bf16_kernel, elementwise_grid(rows * cols), dim3(elementwise_block()), 0, engine_stream(), y, bias,
           rows, cols);
}

}  // namespace mcdl::cuda
