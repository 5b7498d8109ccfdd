// Deterministic block-wide sum for kernels: each warp reduces with shuffles in a fixed
// pattern, warp results meet in shared memory, warp 0 adds them in warp order. Same block
// size and same inputs give the same bits on every run.
#pragma once
#include "kernels/cuda/cuda_common.h"

namespace mcdl::cuda {

template <class T>
__device__ __forceinline__ T warp_sum(T value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

// The sum of `value` over the block, returned to every thread. blockDim.x must be a multiple
// of 32 (at most 1024); `scratch` is shared memory for 32 values. Every thread must call it.
template <class T>
__device__ T block_sum(T value, T* scratch) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  value = warp_sum(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    T total = lane < warps ? scratch[lane] : T(0);
    total = warp_sum(total);
    if (lane == 0) scratch[0] = total;
  }
  __syncthreads();
  const T result = scratch[0];
  __syncthreads();  // scratch may be reused by the caller's next block_sum
  return result;
}

}  // namespace mcdl::cuda
