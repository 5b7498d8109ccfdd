// Building blocks of the row kernels of nn.cu and loss.cu: one block per row of d contiguous
// elements (a grid-stride loop over rows, so any row count fits the grid), strided loops inside
// the row (any d at any block size), block-wide sum (block_reduce.h) and max in a fixed order,
// and float/double overloads of the math the kernels use. Included by .cu files only.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/block_reduce.h"
#include "kernels/cuda/launch_config.h"

namespace mcdl::cuda {

// Threads per row: about four elements each, 32 to 256 (the override of block_size() wins).
inline unsigned row_block(int64_t d) {
  const auto per_four = static_cast<unsigned>(std::clamp<int64_t>((d + 3) / 4, 32, 256));
  return block_size(std::bit_ceil(per_four));
}

// One block per row up to the grid limit; a kernel's block handles rows blockIdx.x,
// blockIdx.x + gridDim.x, ... (uniform per block, so barriers inside the row loop are safe).
inline dim3 row_grid(int64_t rows) { return dim3(static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65535))); }

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }
__device__ __forceinline__ float log_of(float x) { return logf(x); }
__device__ __forceinline__ double log_of(double x) { return log(x); }
__device__ __forceinline__ float sqrt_of(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_of(double x) { return sqrt(x); }
__device__ __forceinline__ float erf_of(float x) { return erff(x); }
__device__ __forceinline__ double erf_of(double x) { return erf(x); }

// The larger of a and b as std::max(a, b) picks it (a NaN in b is ignored, as in the CPU kernels).
template <class T>
__device__ __forceinline__ T max_of(T a, T b) {
  return a < b ? b : a;
}

template <class T>
__device__ __forceinline__ T warp_max(T value) {
  for (int offset = 16; offset > 0; offset /= 2) value = max_of(value, __shfl_down_sync(0xffffffffu, value, offset));
  return value;
}

// The maximum of `value` over the block, returned to every thread; the same contract as
// block_sum (every thread calls it, `scratch` is shared memory for 32 values).
template <class T>
__device__ T block_max(T value, T* scratch) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  value = warp_max(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    T top = lane < warps ? scratch[lane] : -INFINITY;
    top = warp_max(top);
    if (lane == 0) scratch[0] = top;
  }
  __syncthreads();
  const T result = scratch[0];
  __syncthreads();  // scratch may be reused by the caller's next reduction
  return result;
}

// log Σ exp(x) of one row of d elements, the row maximum subtracted first so no exp overflows
// (as cpu::row_log_sum_exp). Every thread of the block calls it and gets the value.
template <class T>
__device__ T row_log_sum_exp(const T* x, int64_t d, T* scratch) {
  T top = -INFINITY;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) top = max_of(top, x[c]);
  top = block_max(top, scratch);
  T sum = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) sum += exp_of(x[c] - top);
  return top + log_of(block_sum(sum, scratch));
}

// dst = value (overwrite) or dst += value.
template <class T>
__device__ __forceinline__ void write_grad(T& dst, T value, bool overwrite) {
  dst = overwrite ? value : dst + value;
}

}  // namespace mcdl::cuda
