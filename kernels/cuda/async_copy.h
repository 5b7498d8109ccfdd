// One thread's asynchronous copies from global to shared memory (cp.async, sm_80 and newer), for
// kernel sources: 16 bytes each, in groups, so that a block stages the next tile while it
// computes on the current one.
//
//   AsyncCopies copies;               // one per thread
//   copies.copy16(to, from, valid);   // queued; 16 zero bytes where !valid (`from` is not read)
//   copies.commit();                  // closes a group
//   copies.wait<1>();                 // every group but the newest one has landed
//
// A thread sees its own copies after the wait; other threads see them after a barrier that
// follows it. In the emulator the copies are deferred until the wait that covers them, the latest
// moment the hardware may take: a kernel that reads a tile before waiting for it reads stale bytes
// there, and its parity test fails.
#pragma once
#include <cstdint>

#include "kernels/cuda/cuda_common.h"

#if !defined(__CUDA_ARCH__) && !defined(__CUDACC__)
#include <cstring>

#include "kernels/emu/commit_groups.h"
#endif

namespace mcdl::cuda {

class AsyncCopies {
 public:
  __device__ __forceinline__ void copy16(void* to, const void* from, bool valid) {
#if defined(__CUDA_ARCH__)
    const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(to));
    const int source_bytes = valid ? 16 : 0;  // the rest of the 16 bytes are filled with zeros
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(from), "r"(source_bytes));
#elif !defined(__CUDACC__)
    copies_.push(Copy{to, valid ? from : nullptr});
#endif
  }

  __device__ __forceinline__ void commit() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;\n" ::);
#elif !defined(__CUDACC__)
    copies_.commit();
#endif
  }

  template <int Pending>
  __device__ __forceinline__ void wait() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#elif !defined(__CUDACC__)
    copies_.wait(Pending, [](const Copy& copy) {
      if (copy.from)
        std::memcpy(copy.to, copy.from, 16);
      else
        std::memset(copy.to, 0, 16);
    });
#endif
  }

 private:
#if !defined(__CUDA_ARCH__) && !defined(__CUDACC__)
  struct Copy {
    void* to;
    const void* from;  // null: fill with zeros
  };
  emu::detail::CommitGroups<Copy> copies_;
#endif
};

}  // namespace mcdl::cuda
