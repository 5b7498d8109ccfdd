// Launch geometry shared by the element-wise kernels: a grid-stride loop over n elements
// with a bounded grid (enough blocks to fill any current GPU, few enough for the emulator),
// and the vectorised form of that loop for the memory-bound kernels (16-byte packs, several
// packs in flight per thread, a grid of at most one wave of resident blocks), with the
// occupancy helpers the row and reduction kernels size their grids with.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/launch_config.h"

// MCDL_UNROLL: full unrolling of a loop with a constant trip count; MCDL_UNROLL_BY(n): unrolling
// by n of a loop with a run-time trip count (nvcc's #pragma unroll; g++ of the emulator build
// does not know that pragma and needs none).
#ifdef __CUDACC__
#define MCDL_PRAGMA(text) _Pragma(#text)
#define MCDL_UNROLL MCDL_PRAGMA(unroll)
#define MCDL_UNROLL_BY(n) MCDL_PRAGMA(unroll n)
#else
#define MCDL_UNROLL
#define MCDL_UNROLL_BY(n)
#endif

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

// ---- 16-byte packs ------------------------------------------------------------------------------

// W consecutive elements that load and store as one instruction (ld/st.global.v4.f32 for
// 4 floats, .v2.f64 for 2 doubles): a warp then moves 512 bytes per instruction instead of
// 128, which is what lets a streaming kernel keep enough bytes in flight to reach the copy
// bandwidth. The address must be aligned to the pack's size.
template <class T, int W>
struct alignas(sizeof(T) * W) Pack {
  T v[W];
};

// Elements per 16-byte pack: 4 floats, 2 doubles.
template <class T>
inline constexpr int pack_width = 16 / static_cast<int>(sizeof(T));

template <int W, class T>
__device__ __forceinline__ Pack<T, W> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, W>*>(p);
}
template <int W, class T>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, W>& value) {
  *reinterpret_cast<Pack<T, W>*>(p) = value;
}

// Whether every given pointer may be read in 16-byte packs (null pointers, which the kernel
// does not read, count as aligned).
template <class... Ptrs>
inline bool packs_aligned(const Ptrs*... pointers) {
  return ((reinterpret_cast<uintptr_t>(pointers) % 16 == 0) && ...);
}

// Multiprocessors of device 0 (queried once; the emulator reports 1).
inline unsigned sm_count() {
  static const unsigned count = [] {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return 1u;
    return static_cast<unsigned>(std::max(1, prop.multiProcessorCount));
  }();
  return count;
}

// Blocks of `kernel` at `block` threads (and `shared` bytes of dynamic shared memory) that
// the GPU holds at once: the occupancy calculator's blocks per SM (registers, shared memory,
// thread limits) times the SMs, asked once per kernel and block size (a kernel whose shared
// memory varies between launches must keep it from ever limiting occupancy, as reduce.cu's
// at most 64 KB per SM do). The emulator assumes 2048 resident threads per SM, as sm_80 and
// sm_90.
template <auto kernel>
unsigned resident_blocks(unsigned block, size_t shared = 0) {
  static std::atomic<int> per_sm_by_block[33];  // index block / 32; 0 = not asked yet
  std::atomic<int>& slot = per_sm_by_block[std::min(block / 32, 32u)];
  int per_sm = slot.load(std::memory_order_relaxed);
  if (per_sm == 0) {
#ifdef __CUDACC__
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(block), shared) !=
        cudaSuccess)
      per_sm = 1;
#else
    (void)shared;
    per_sm = static_cast<int>(2048 / block);
#endif
    per_sm = std::max(per_sm, 1);
    slot.store(per_sm, std::memory_order_relaxed);
  }
  return sm_count() * static_cast<unsigned>(per_sm);
}

// `block`, or less where `kernel` cannot run that many threads per block (its registers per
// thread times the threads exceed an SM's 64K registers: the heaviest kernels, e.g. double row
// kernels that keep 32 elements per lane in registers, stop at 256). Only for kernels whose
// results do not depend on the block size.
template <auto kernel>
unsigned fitting_block(unsigned block) {
#ifdef __CUDACC__
  static const unsigned limit = [] {
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, kernel) == cudaSuccess
               ? static_cast<unsigned>(attributes.maxThreadsPerBlock) / 32 * 32
               : 1024u;
  }();
  return std::min(block, std::max(32u, limit));
#else
  return block;
#endif
}

// Grid for a grid-stride loop of `work` items (one per thread and trip) that keeps all
// threads equally busy: the fewest trips per thread with which one wave of resident blocks
// covers the work, then the fewest blocks that cover it at that many trips. So every thread
// makes the same number of trips (the last few one less) and no partly filled second wave
// trails the first.
inline dim3 balanced_grid(int64_t work, unsigned block, unsigned resident) {
  const int64_t threads = static_cast<int64_t>(resident) * block;
  const int64_t trips = std::max<int64_t>(1, (work + threads - 1) / threads);
  return dim3(std::max(1u, blocks_for((work + trips - 1) / trips, block)));
}

// ---- the vectorised element-wise loop -------------------------------------------------------------

// Packs each thread keeps in flight per iteration: 4 × 16 bytes per input stream.
constexpr int map_unroll = 4;

// Runs body over elements [0, n) with a grid-stride loop over W-element packs. A Body has
//   using value_type = T; static constexpr int loads = K;   (input streams, K >= 1)
//   template <int P> void load(int64_t i, Pack<T, P>* in) const;        (fills in[0..K))
//   template <int P> void store(int64_t i, const Pack<T, P>* in) const; (computes, writes)
// for elements [i, i + P). Each thread first loads map_unroll packs, then computes and stores
// them: the loads are independent of each other and of the stores, so all are in flight at
// once (the compiler may not move a load above a store that could alias it). With W > 1 every
// pointer the body touches must be 16-byte aligned; the last n % W elements then go one per
// thread through P = 1.
template <int W, class Body>
__device__ __forceinline__ void map_elements(const Body& body, int64_t n) {
  using T = typename Body::value_type;
  constexpr int K = Body::loads;
  const int64_t packs = n / W, stride = grid_stride();
  for (int64_t p = grid_index(); p < packs; p += map_unroll * stride) {
    Pack<T, W> in[map_unroll][K] = {};
    MCDL_UNROLL
    for (int u = 0; u < map_unroll; ++u)
      if (p + u * stride < packs) body.template load<W>((p + u * stride) * W, in[u]);
    MCDL_UNROLL
    for (int u = 0; u < map_unroll; ++u)
      if (p + u * stride < packs) body.template store<W>((p + u * stride) * W, in[u]);
  }
  if constexpr (W > 1) {
    const int64_t i = packs * W + grid_index();
    if (i < n) {
      Pack<T, 1> in[K] = {};
      body.template load<1>(i, in);
      body.template store<1>(i, in);
    }
  }
}

template <int W, class Body>
__global__ void map_kernel(Body body, int64_t n) {
  map_elements<W>(body, n);
}

// Runs body over n elements: in 16-byte packs when `aligned` (every pointer the body touches
// is 16-byte aligned), else element by element.
template <class Body>
void launch_map(const Body& body, int64_t n, bool aligned) {
  if (n <= 0) return;
  auto run = [&](auto width) {
    constexpr int W = decltype(width)::value;
    constexpr auto kernel = map_kernel<W, Body>;
    const unsigned block = fitting_block<kernel>(elementwise_block());
    const int64_t trips = (n / W + map_unroll - 1) / map_unroll;  // unrolled iterations of the loop
    launch(kernel, balanced_grid(trips, block, resident_blocks<kernel>(block)), dim3(block), 0, engine_stream(), body,
           n);
  };
  if (aligned) {
    run(std::integral_constant<int, pack_width<typename Body::value_type>>{});
  } else {
    run(std::integral_constant<int, 1>{});
  }
}

}  // namespace mcdl::cuda
