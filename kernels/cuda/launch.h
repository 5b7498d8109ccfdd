// The one way to launch a CUDA kernel in this project:
//   mcdl::cuda::launch(kernel, grid, block, shared_bytes, stream, args...);
// Under nvcc it is kernel<<<grid, block, shared_bytes, stream>>>(args...) followed by a check for
// launch errors; under g++ it runs the kernel to completion in the CPU emulator
// (kernels/emu/cuda_emu.h). Kernel sources include this header, so one .cu file builds both ways
// and no call site spells <<<>>>, which g++ cannot parse.
#pragma once
#include <cstddef>
#include <utility>

#include "../emu/cuda_emu.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#endif

namespace mcdl::cuda {

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
            Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "mcdl::cuda::launch: wrong number of kernel arguments");
#ifdef __CUDACC__
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
  // Catches launch errors (configuration, no device); faults inside the kernel surface at the next
  // synchronising call.
  if (const cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    throw std::runtime_error(std::string("CUDA kernel launch failed: ") + cudaGetErrorName(error) + ": " +
                             cudaGetErrorString(error));
#else
  emu::launch(kernel, grid, block, shared_bytes, stream, std::forward<Args>(args)...);
#endif
}

}  // namespace mcdl::cuda
