#include "kernels/cuda/bf16_inference.h"

#include "kernels/cuda/block_reduce.h"
#include "kernels/cuda/device_math.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/row_kernels.h"

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

__global__ void gelu_bf16_kernel(const bf16* x, bf16* y, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const float v = value_of(x[i]);
    y[i] = bf16(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
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
  if (n > 0) launch(gelu_bf16_kernel, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), x, y, n);
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
