// Deterministic warp- and block-wide reductions for kernels (sum and max): each warp reduces
// with shuffles in a fixed pattern, warp results meet in shared memory, warp 0 combines them in
// warp order. Same block size and same inputs give the same bits on every run.
#pragma once
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/device_math.h"

namespace mcdl::cuda {

constexpr unsigned full_warp = 0xffffffffu;

struct Plus {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOf {  // max_of: a NaN in the second operand is ignored
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return max_of(a, b);
  }
};
struct FMaxOf {  // fmax_of: commutative, a NaN operand loses
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return fmax_of(a, b);
  }
};

// combine over the 32 lanes of a warp, the result in lane 0 (a tree by __shfl_down_sync).
template <class T, class Combine>
__device__ __forceinline__ T warp_reduce(T value, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) value = combine(value, __shfl_down_sync(full_warp, value, offset));
  return value;
}

// combine over the 32 lanes of a warp, to every lane: an xor butterfly, whose partial results
// meet in the same order in every lane, so all lanes agree bit for bit for a commutative combine.
template <class T, class Combine>
__device__ __forceinline__ T warp_all_reduce(T value, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) value = combine(value, __shfl_xor_sync(full_warp, value, offset));
  return value;
}

// combine of `value` over the block, returned to every thread; `identity` fills the lanes of
// warp 0 beyond the block's warps. blockDim.x must be a multiple of 32 (at most 1024);
// `scratch` is shared memory for 32 values. Every thread must call it.
template <class T, class Combine>
__device__ T block_reduce(T value, T identity, T* scratch, Combine combine) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  value = warp_reduce(value, combine);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    T total = lane < warps ? scratch[lane] : identity;
    total = warp_reduce(total, combine);
    if (lane == 0) scratch[0] = total;
  }
  __syncthreads();
  const T result = scratch[0];
  __syncthreads();  // scratch may be reused by the caller's next reduction
  return result;
}

template <class T>
__device__ T block_sum(T value, T* scratch) {
  return block_reduce(value, T(0), scratch, Plus{});
}

// As std::max (max_of), -inf for no element.
template <class T>
__device__ T block_max(T value, T* scratch) {
  return block_reduce(value, T(-INFINITY), scratch, MaxOf{});
}

template <class T>
__device__ __forceinline__ T warp_all_sum(T value) {
  return warp_all_reduce(value, Plus{});
}

// NaN ignored (fmax_of).
template <class T>
__device__ __forceinline__ T warp_all_max(T value) {
  return warp_all_reduce(value, FMaxOf{});
}

}  // namespace mcdl::cuda
