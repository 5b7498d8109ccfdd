// Warp matrix products on tensor cores (nvcuda::wmma) for kernel sources: CUDA's <mma.h> under
// nvcc, the emulator's (kernels/emu/wmma.h) under g++; and the project's bf16 seen as CUDA's
// __nv_bfloat16, the type the WMMA functions take.
#pragma once
#include "kernels/bf16.h"
#include "kernels/cuda/cuda_common.h"

#ifdef __CUDACC__
#include <mma.h>
#else
#include "kernels/emu/wmma.h"
#endif

namespace mcdl::cuda {

// Both are the upper 16 bits of an IEEE float, so bf16 data is handed to WMMA in place.
static_assert(sizeof(bf16) == sizeof(__nv_bfloat16) && alignof(bf16) == alignof(__nv_bfloat16),
              "mcdl::bf16 and __nv_bfloat16 must share one 16-bit layout");
__device__ __forceinline__ const __nv_bfloat16* as_wmma(const bf16* p) {
  return reinterpret_cast<const __nv_bfloat16*>(p);
}

}  // namespace mcdl::cuda
