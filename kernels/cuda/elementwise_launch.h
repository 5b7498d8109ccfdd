// Launch geometry shared by the element-wise kernels: a grid-stride loop over n elements
// with a bounded grid (enough blocks to fill any current GPU, few enough for the emulator).
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/launch_config.h"

namespace mcdl::cuda {

inline unsigned elementwise_block() { return block_size(256); }

inline dim3 elementwise_grid(int64_t n) {
  return dim3(std::max(1u, std::min(blocks_for(n, elementwise_block()), 4096u)));
}

// The first index and the stride of a grid-stride loop.
__device__ __forceinline__ int64_t grid_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace mcdl::cuda
