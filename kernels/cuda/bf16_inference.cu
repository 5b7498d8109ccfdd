#include "kernels/cuda/bf16_inference.h"

#include "kernels/cuda/block_reduce.h"
#include "kernels/cuda/device_math.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/row_kernels.h"
#include "kernels/cuda/runtime.h"

namespace mcdl::cuda {
namespace {

__device__ __forceinline__ float value_of(bf16 v) { return static_cast<float>(v); }

// A warp per row (rows of the ViT: 768 or 197 elements), the row read from L1 on its later passes.
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

// Eight bf16 values that load and store as one 16-byte access.
struct alignas(16) Bf16x8 {
  bf16 v[8];
};

__device__ __forceinline__ bf16 gelu_of(bf16 x) {
  const float v = value_of(x);
  return bf16(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
}

// With `packed`, n / 8 packs of eight (the buffers 16-byte aligned), then the tail one by one.
__global__ void gelu_bf16_kernel(const bf16* x, bf16* y, int64_t n, bool packed) {
  const int64_t packs = packed ? n / 8 : 0;
  for (int64_t i = grid_index(); i < packs; i += grid_stride()) {
    Bf16x8 pack = reinterpret_cast<const Bf16x8*>(x)[i];
    MCDL_UNROLL
    for (int j = 0; j < 8; ++j) pack.v[j] = gelu_of(pack.v[j]);
    reinterpret_cast<Bf16x8*>(y)[i] = pack;
  }
  for (int64_t i = packs * 8 + grid_index(); i < n; i += grid_stride()) y[i] = gelu_of(x[i]);
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
  if (rows > 0 && d > 0)
    launch(layer_norm_bf16_kernel, bf16_rows_grid(rows), bf16_rows_block(), 0, engine_stream(), x, gamma, beta, y,
           rows, d, eps);
}

void gelu_bf16(const bf16* x, bf16* y, int64_t n) {
  if (n <= 0) return;
  // Engine buffers are 256-byte aligned; a view that is not goes one by one.
  const bool packed = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  launch(gelu_bf16_kernel, elementwise_grid(packed ? (n + 7) / 8 : n), dim3(elementwise_block()), 0, engine_stream(),
         x, y, n, packed);
}

void attention_bf16(const bf16* qkv, bf16* scores, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                    int64_t head_dim, float scale) {
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
