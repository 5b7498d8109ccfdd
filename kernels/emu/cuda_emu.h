// Runs CUDA C++ kernel sources on the CPU. Built with g++, this header makes a .cu file ordinary
// host C++: the CUDA keywords and built-in variables become macros over the emulator in
// kernels/emu/ (one fiber per CUDA thread, see scheduler.h), and kernels run through
// mcdl::cuda::launch (kernels/cuda/launch.h). Built with nvcc, it only defines the macros kernel
// sources share with the emulator build. Test controls: thread_order.h; errors: error.h.
#pragma once

#ifdef __CUDACC__

// Dynamic shared memory (the launch's shared_bytes), as a T* named `name`. Spelled as one untyped
// byte array so that kernels of one file may view it as different types. 32-byte aligned: WMMA's
// tiles must start on 256 bits.
#define MCDL_DYNAMIC_SHARED(T, name)                                    \
  extern __shared__ __align__(32) unsigned char mcdl_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(mcdl_dynamic_shared_)

#else

#include "device_functions.h"
#include "error.h"
#include "intrinsics.h"
#include "scheduler.h"
#include "symbols.h"
#include "thread_order.h"
#include "vector_types.h"

// Kernel sources can test for the emulator (__CUDA_ARCH__ stays undefined, as in host code).
#define MCDL_CUDA_EMULATOR 1

// Execution-space specifiers mean nothing on the host; __forceinline__ implies inline as in
// CUDA. __restrict__ is a g++ keyword already.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

// Static shared memory: one static variable per declaration, shared by all threads of the block
// running now (blocks run one at a time), filled with 0xFF at each block start. The abi_tag is how
// the emulator finds these variables (symbols.h); `used` keeps the compiler from treating an
// unwritten one as constant zero.
#define __shared__ __attribute__((abi_tag(MCDL_EMU_SHARED_TAG), used)) static

#define MCDL_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(::mcdl::emu::detail::builtins.dynamic_shared)

namespace mcdl::emu::detail {
inline const uint3& thread_idx() { return builtins.thread_idx; }
inline const uint3& block_idx() { return builtins.block_idx; }
inline const dim3& block_dim() { return builtins.block_dim; }
inline const dim3& grid_dim() { return builtins.grid_dim; }
}  // namespace mcdl::emu::detail

#define threadIdx (::mcdl::emu::detail::thread_idx())
#define blockIdx (::mcdl::emu::detail::block_idx())
#define blockDim (::mcdl::emu::detail::block_dim())
#define gridDim (::mcdl::emu::detail::grid_dim())

#endif
