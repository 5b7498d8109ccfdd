// Included by every .cu file: the CUDA runtime (or its emulator stand-in), the launch helper,
// the engine's stream, and the checked-call macro. Never included by engine code.
#pragma once
#include <stdexcept>
#include <string>

#include "kernels/cuda/launch.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#else
#include "kernels/emu/runtime_api.h"
#endif

namespace mcdl::cuda {

// The stream every engine kernel and copy is ordered on (one per process).
cudaStream_t engine_stream();
// Throws CaptureError (runtime.h) while a CUDA graph is being captured: an upload's staging copy
// would be replayed from host memory that has been reused since.
void refuse_upload_in_capture();

[[noreturn]] inline void throw_cuda_error(const char* call, const char* file, int line, const std::string& what) {
  throw std::runtime_error(std::string("CUDA call failed: ") + call + " at " + file + ":" + std::to_string(line) +
                           ": " + what);
}

// Grid size for n elements at `block` threads per block, one element per thread.
inline unsigned blocks_for(long long n, unsigned block) {
  return static_cast<unsigned>((n + block - 1) / block);
}

}  // namespace mcdl::cuda

// Checks a CUDA runtime call; throws with the call, file and line.
#define MCDL_CUDA_CHECK(call)                                                                     \
  do {                                                                                            \
    const cudaError_t mcdl_status_ = (call);                                                      \
    if (mcdl_status_ != cudaSuccess)                                                              \
      ::mcdl::cuda::throw_cuda_error(#call, __FILE__, __LINE__,                                   \
                                     std::string(cudaGetErrorName(mcdl_status_)) + ": " +        \
                                         cudaGetErrorString(mcdl_status_));                       \
  } while (0)
