// Hopper's warpgroup matrix product for kernel sources: wgmma.mma_async m64n64k16, bf16 in and
// fp32 accumulators, A from registers and B from shared memory through a matrix descriptor, with
// the fence, commit_group and wait_group that order it (PTX ISA, "Asynchronous Warpgroup Level
// Matrix Multiply-Accumulate Instructions"). Four warps (a warpgroup, 128 consecutive threads)
// issue each product together.
//
//   WarpgroupMma mma;                    // one per thread
//   mma.publish_shared_writes();         // B written by this thread, then __syncthreads()
//   WarpgroupMma::hold(d), hold(a);      // zeroed accumulators and A fragments made before...
//   mma.fence();                         // ...the fence: registers written since are ready
//   mma.m64n64k16<false>(d, a, b, acc);  // d (+)= A·B, queued
//   mma.commit();                        // closes a group
//   mma.wait<0>();                       // every group has finished
//   WarpgroupMma::hold(d);               // d may be read
//
// Warp w of the warpgroup holds rows 16w to 16w + 15 of A and D. With g = lane / 4, t = lane % 4:
//   a[0] = A[g][2t, 2t+1]   a[1] = A[g+8][2t, 2t+1]   a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
//   d[4i], d[4i+1] = D[g][8i+2t, 8i+2t+1]             d[4i+2], d[4i+3] = D[g+8][8i+2t, 8i+2t+1]
// that is, mma.m16n8k16's A fragment and eight of its accumulators side by side (kernels/cuda/mma.h),
// so accumulators rounded to bf16 become the next product's A operand in place.
//
// B [16×64] lies in shared memory without swizzle, as 8×8 core matrices of 128 contiguous bytes
// (16 bytes a row): `leading_bytes` steps from one core matrix to the next along K, `stride_bytes`
// along N. K-major B (TransposeB false) has a core row along K, MN-major B (true) along N.
//
// On the GPU only sm_90a's device code has these instructions (elsewhere they trap, and the host
// launches such a kernel only on a 9.0 device); in the emulator, kernels/emu/wgmma.h.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cuda_common.h"

#ifndef __CUDACC__
#include "kernels/emu/wgmma.h"
#endif

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MCDL_WGMMA_NATIVE 1
#endif

namespace mcdl::cuda {

// The descriptor of a B operand at `start` (shared memory, 16-byte aligned).
__device__ __forceinline__ uint64_t shared_matrix_descriptor(const void* start, uint32_t leading_bytes,
                                                             uint32_t stride_bytes) {
#if defined(__CUDA_ARCH__)
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(start));
#elif !defined(__CUDACC__)
  const uint32_t address = emu::shared_window_address(start);
#else
  const uint32_t address = 0;
  (void)start;
#endif
  return (address >> 4 & 0x3fffu) | static_cast<uint64_t>(leading_bytes >> 4 & 0x3fffu) << 16 |
         static_cast<uint64_t>(stride_bytes >> 4 & 0x3fffu) << 32;
}

class WarpgroupMma {
 public:
  // fence.proxy.async.shared::cta: the products read shared memory through the async proxy, so
  // what this thread wrote there by ordinary stores or cp.async must be fenced before a barrier
  // hands it to them. The emulator refuses a product issued by a thread that never called it.
  __device__ __forceinline__ void publish_shared_writes() {
#if defined(MCDL_WGMMA_NATIVE)
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#elif !defined(__CUDACC__)
    queue_.publish_shared_writes();
#endif
  }

  __device__ __forceinline__ void fence() {
#if defined(MCDL_WGMMA_NATIVE)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#elif defined(__CUDA_ARCH__)
    __trap();
#elif !defined(__CUDACC__)
    queue_.fence();
#endif
  }

  // d = A·B, or d += A·B when `accumulate`.
  template <bool TransposeB>
  __device__ __forceinline__ void m64n64k16(float (&d)[32], const uint32_t (&a)[4], uint64_t b, bool accumulate) {
#if defined(MCDL_WGMMA_NATIVE)
    asm volatile(
        "{\n.reg .pred keep;\nsetp.ne.b32 keep, %36, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %37, keep, 1, 1, %38;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(static_cast<int>(accumulate)), "l"(b),
          "n"(static_cast<int>(TransposeB)));
#elif defined(__CUDA_ARCH__)
    (void)d, (void)a, (void)b, (void)accumulate;
    __trap();
#elif !defined(__CUDACC__)
    queue_.issue(d, a, b, accumulate, TransposeB, std::source_location::current());
#endif
  }

  __device__ __forceinline__ void commit() {
#if defined(MCDL_WGMMA_NATIVE)
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#elif !defined(__CUDACC__)
    queue_.commit();
#endif
  }

  // Every committed group but the newest `Pending` has finished; read their accumulators after
  // hold(d).
  template <int Pending>
  __device__ __forceinline__ void wait() {
#if defined(MCDL_WGMMA_NATIVE)
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#elif !defined(__CUDACC__)
    queue_.wait(Pending);
#endif
  }

  // Pins registers (float accumulators or uint32_t A fragments) in place: values written before it
  // (accumulators zeroed, A fragments made) are computed before the fence that follows, and
  // accumulators are read only after the wait it follows. Without it the compiler may move such
  // work across the fence or the wait, and ptxas then serializes the products ("warpgroup.arrive
  // is injected").
  template <class T, int N>
  __device__ __forceinline__ static void hold(T (&x)[N]) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, uint32_t>, "hold takes accumulators or A fragments");
#if defined(MCDL_WGMMA_NATIVE)
    for (int i = 0; i < N; ++i) {
      if constexpr (std::is_same_v<T, float>)
        asm volatile("" : "+f"(x[i])::"memory");
      else
        asm volatile("" : "+r"(x[i])::"memory");
    }
#else
    (void)x;
#endif
  }

 private:
#if !defined(__CUDA_ARCH__) && !defined(__CUDACC__)
  emu::detail::WarpgroupQueue queue_;
#endif
};

}  // namespace mcdl::cuda
