// Kernels that exercise the CUDA emulator (kernels/emu/), with one host launcher each; the tests
// in tests/emu/test_emulator.cpp run them. Plain CUDA, built like every kernels/cuda/*.cu file:
// by nvcc for the GPU, and by g++ against the emulator. Pointers are device pointers on the GPU
// and host pointers in the emulator.
#include "kernels/cuda/launch.h"

namespace mcdl::emu_selftest {

constexpr unsigned full_mask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(full_mask, v, offset);
  return v;
}

// The sum of v over the block (in thread 0), through one shared slot per warp. blockDim.x must be
// a multiple of 32: the shuffles use every lane.
__device__ float block_reduce(float v, float* warp_sums) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = 0.0f;
  if (warp == 0) v = warp_sum(lane < warps ? warp_sums[lane] : 0.0f);
  return v;
}

// out[blockIdx.x] = the sum of the elements of x the block visits in a grid-stride loop.
__global__ void block_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
  __shared__ float warp_sums[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  v = block_reduce(v, warp_sums);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// block_sum with the warp sums in dynamic shared memory (blockDim.x / 32 floats).
__global__ void __launch_bounds__(1024) block_sum_dynamic(const float* __restrict__ x, float* __restrict__ out, int n) {
  MCDL_DYNAMIC_SHARED(float, warp_sums);
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  v = block_reduce(v, warp_sums);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// Rotates each block's slice of x left by one through shared memory. Without `synchronize` the
// barrier between the shared write and the neighbour's read is missing: the bug under test.
__global__ void rotate_left(const float* x, float* y, bool synchronize) {
  __shared__ float tile[1024];
  const unsigned t = threadIdx.x, offset = blockIdx.x * blockDim.x;
  tile[t] = x[offset + t];
  if (synchronize) __syncthreads();
  y[offset + t] = tile[(t + 1) % blockDim.x];
}

// Threads from 16 on return before a barrier that threads 0-15 wait at.
__global__ void early_exit_barrier(float* y) {
  if (threadIdx.x >= 16) return;
  __syncthreads();
  y[threadIdx.x] = 1.0f;
}

// early_exit_barrier with an object on every thread's stack whose destructor counts itself in
// *destroyed: threads 16-31 destroy theirs as they return; threads 0-15 are still suspended at the
// barrier when the launch fails.
struct CountedOnStack {
  int* destroyed;
  __device__ ~CountedOnStack() { atomicAdd(destroyed, 1); }
};
__global__ void early_exit_barrier_with_stack_objects(int* destroyed) {
  const CountedOnStack counted{destroyed};
  if (threadIdx.x >= 16) return;
  __syncthreads();
}

// The two halves of the block wait at different barriers.
__global__ void split_barrier(float* y) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  y[threadIdx.x] = 1.0f;
}

// Lanes 0-15 shuffle with a full mask; lanes 16-31 have exited.
__global__ void half_warp_shuffle(float* y) {
  if (threadIdx.x >= 16) return;
  y[threadIdx.x] = __shfl_xor_sync(full_mask, y[threadIdx.x], 1);
}

// Every lane calls a shuffle whose mask names lane 0 only.
__global__ void lane_outside_mask(float* y) { y[threadIdx.x] = __shfl_sync(1u, y[threadIdx.x], 0); }

// Six shuffles of the thread index per thread, all with the given width; the last one reads a
// source lane that differs from lane to lane.
__global__ void shuffle_patterns(int* out, int width) {
  const int t = threadIdx.x;
  int* o = out + 6 * t;
  o[0] = __shfl_sync(full_mask, t, 3, width);
  o[1] = __shfl_up_sync(full_mask, t, 2, width);
  o[2] = __shfl_down_sync(full_mask, t, 2, width);
  o[3] = __shfl_xor_sync(full_mask, t, 1, width);
  o[4] = __shfl_xor_sync(full_mask, t, width, width);
  o[5] = __shfl_sync(full_mask, t, (t % 32 * 7 + 3) % 32, width);
}

// For a block of 40 threads (the second warp has 8 lanes): sums of x over groups of 8 lanes, and
// each lane's read of the thread index 4 lanes down.
__global__ void partial_warp(const double* x, double* sums, float* down4) {
  const int t = threadIdx.x;
  double v = x[t];
  for (int offset = 4; offset > 0; offset /= 2) v += __shfl_xor_sync(full_mask, v, offset, 8);
  sums[t] = v;
  down4[t] = __shfl_down_sync(full_mask, static_cast<float>(t), 4);
}

// Warp votes on x[t] > 0 per warp, a ballot of the even lanes only, and the block-wide
// __syncthreads_count / _or / _and.
__global__ void votes(const int* x, unsigned* ballots, int* any, int* all, unsigned* even_ballots, int* block) {
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int p = x[t] > 0;
  const unsigned ballot = __ballot_sync(full_mask, p);
  const int some = __any_sync(full_mask, p), every = __all_sync(full_mask, p);
  if (lane == 0) {
    ballots[warp] = ballot;
    any[warp] = some;
    all[warp] = every;
  }
  if (lane % 2 == 0) {
    const unsigned even = __ballot_sync(0x55555555u, p);
    __syncwarp(0x55555555u);
    if (lane == 0) even_ballots[warp] = even;
  }
  const int count = __syncthreads_count(p), or_ = __syncthreads_or(p), and_ = __syncthreads_and(p);
  if (t == 0) {
    block[0] = count;
    block[1] = or_;
    block[2] = and_;
  }
}

// Every atomic the emulator provides, over x[0, n) in a grid-stride loop.
__global__ void atomics(const int* x, int n, int* histogram, unsigned* uhistogram, float* fsum, double* dsum, int* imax,
                        unsigned* umax, unsigned long long* cas_count, int* first_claim) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int v = x[i];
    atomicAdd(&histogram[v % 8], 1);
    atomicAdd(&uhistogram[v % 8], 1u);
    atomicAdd(fsum, static_cast<float>(v));
    atomicAdd(dsum, 0.5 * v);
    atomicMax(imax, v - 500);
    atomicMax(umax, static_cast<unsigned>(v));
    unsigned long long seen = *cas_count, expected;
    do {
      expected = seen;
      seen = atomicCAS(cas_count, expected, expected + 1);
    } while (seen != expected);
    atomicCAS(first_claim, -1, i);
  }
}

// Reverses each block's slice of x through dynamic shared memory (blockDim.x floats).
__global__ void reverse_dynamic(const float* x, float* y) {
  MCDL_DYNAMIC_SHARED(float, tile);
  const unsigned t = threadIdx.x, offset = blockIdx.x * blockDim.x;
  tile[t] = x[offset + t];
  __syncthreads();
  y[offset + t] = tile[blockDim.x - 1 - t];
}

// Only block 0 writes its static and dynamic shared tiles; every block reads them back. A
// template, like most kernels, because the emulator must find template kernels' shared variables.
template <class T>
__global__ void read_unwritten(T* static_out, T* dynamic_out) {
  __shared__ T tile[64];
  MCDL_DYNAMIC_SHARED(T, dynamic_tile);
  const unsigned t = threadIdx.x, offset = blockIdx.x * blockDim.x;
  if (blockIdx.x == 0) {
    tile[t] = T(7);
    dynamic_tile[t] = T(7);
  }
  __syncthreads();
  static_out[offset + t] = tile[t];
  dynamic_out[offset + t] = dynamic_tile[t];
}

// One record of 13 ints per thread of the grid (blocks, then threads, x fastest): threadIdx,
// blockIdx, blockDim, gridDim, and the linear thread index read from the neighbouring lane
// (linear index xor 1) with a shuffle.
__global__ void record_indices(int* out) {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  __syncthreads();
  const int neighbour = __shfl_xor_sync(full_mask, static_cast<int>(t), 1);
  const int record[13] = {static_cast<int>(threadIdx.x),
                          static_cast<int>(threadIdx.y),
                          static_cast<int>(threadIdx.z),
                          static_cast<int>(blockIdx.x),
                          static_cast<int>(blockIdx.y),
                          static_cast<int>(blockIdx.z),
                          static_cast<int>(blockDim.x),
                          static_cast<int>(blockDim.y),
                          static_cast<int>(blockDim.z),
                          static_cast<int>(gridDim.x),
                          static_cast<int>(gridDim.y),
                          static_cast<int>(gridDim.z),
                          neighbour};
  for (int k = 0; k < 13; ++k) out[13 * (b * threads + t) + k] = record[k];
}

constexpr int math_outputs = 14;

// math_outputs results of math intrinsics per element of x.
__global__ void math(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float* o = y + math_outputs * i;
  o[0] = __expf(v);
  o[1] = expf(v);
  o[2] = rsqrtf(fabsf(v) + 1.0f);
  o[3] = __fdividef(v, 3.0f);
  o[4] = __fmul_rn(v, 3.0f);
  o[5] = __fadd_rn(v, 0.5f);
  o[6] = __fmaf_rn(v, 2.0f, 1.0f);
  o[7] = fmaxf(v, 0.0f);
  o[8] = erff(v);
  o[9] = static_cast<float>(__float2int_rn(v * 10.0f));
  o[10] = static_cast<float>(min(static_cast<int>(v * 10.0f), 3));
  o[11] = static_cast<float>(max(static_cast<int>(v * 10.0f), -3));
  o[12] = __saturatef(v);
  o[13] = tanhf(v);
}

// y = a * x; barrier-free (the emulator's cheap path).
__global__ void scale(const float* x, float* y, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

// The order in which the threads of one block run, before and after a barrier: each thread
// takes a ticket from an atomic counter.
__global__ void execution_rank(int* counter, int* before, int* after) {
  before[threadIdx.x] = atomicAdd(counter, 1);
  __syncthreads();
  after[threadIdx.x] = atomicAdd(counter, 1) - static_cast<int>(blockDim.x);
}

// Each thread changes its copy of the parameter n; no thread may see another's change.
__global__ void own_parameters(int* out, int n) {
  n += threadIdx.x;
  out[threadIdx.x] = n;
}

void launch_block_sum(const float* x, float* out, int n, int blocks, int threads, bool dynamic_shared) {
  if (dynamic_shared)
    cuda::launch(block_sum_dynamic, blocks, threads, threads / 32 * sizeof(float), nullptr, x, out, n);
  else
    cuda::launch(block_sum, blocks, threads, 0, nullptr, x, out, n);
}
void launch_rotate_left(const float* x, float* y, int blocks, int threads, bool synchronize) {
  cuda::launch(rotate_left, blocks, threads, 0, nullptr, x, y, synchronize);
}
void launch_early_exit_barrier(float* y) { cuda::launch(early_exit_barrier, 1, 32, 0, nullptr, y); }
void launch_early_exit_barrier_with_stack_objects(int* destroyed) {
  cuda::launch(early_exit_barrier_with_stack_objects, 1, 32, 0, nullptr, destroyed);
}
void launch_split_barrier(float* y) { cuda::launch(split_barrier, 1, 32, 0, nullptr, y); }
void launch_half_warp_shuffle(float* y) { cuda::launch(half_warp_shuffle, 1, 32, 0, nullptr, y); }
void launch_lane_outside_mask(float* y) { cuda::launch(lane_outside_mask, 1, 32, 0, nullptr, y); }
void launch_shuffle_patterns(int* out, int width) { cuda::launch(shuffle_patterns, 1, 64, 0, nullptr, out, width); }
void launch_partial_warp(const double* x, double* sums, float* down4) {
  cuda::launch(partial_warp, 1, 40, 0, nullptr, x, sums, down4);
}
void launch_votes(const int* x, unsigned* ballots, int* any, int* all, unsigned* even_ballots, int* block) {
  cuda::launch(votes, 1, 96, 0, nullptr, x, ballots, any, all, even_ballots, block);
}
void launch_atomics(const int* x, int n, int* histogram, unsigned* uhistogram, float* fsum, double* dsum, int* imax,
                    unsigned* umax, unsigned long long* cas_count, int* first_claim) {
  cuda::launch(atomics, 3, 128, 0, nullptr, x, n, histogram, uhistogram, fsum, dsum, imax, umax, cas_count,
               first_claim);
}
void launch_reverse_dynamic(const float* x, float* y, int blocks, int threads) {
  cuda::launch(reverse_dynamic, blocks, threads, threads * sizeof(float), nullptr, x, y);
}
template <class T>
void launch_read_unwritten(T* static_out, T* dynamic_out, int blocks) {
  cuda::launch(read_unwritten<T>, blocks, 64, 64 * sizeof(T), nullptr, static_out, dynamic_out);
}
template void launch_read_unwritten(float*, float*, int);
template void launch_read_unwritten(unsigned*, unsigned*, int);
void launch_record_indices(int* out, dim3 grid, dim3 block) {
  cuda::launch(record_indices, grid, block, 0, nullptr, out);
}
void launch_math(const float* x, float* y, int n) { cuda::launch(math, (n + 127) / 128, 128, 0, nullptr, x, y, n); }
void launch_scale(const float* x, float* y, float a, int n) {
  cuda::launch(scale, (n + 255) / 256, 256, 0, nullptr, x, y, a, n);
}
void launch_scale_on(const float* x, float* y, float a, int n, cudaStream_t stream) {
  cuda::launch(scale, (n + 255) / 256, 256, 0, stream, x, y, a, n);
}
void launch_execution_rank(int* counter, int* before, int* after, int threads) {
  cuda::launch(execution_rank, 1, threads, 0, nullptr, counter, before, after);
}
void launch_own_parameters(int* out, int n, int threads) {
  cuda::launch(own_parameters, 1, threads, 0, nullptr, out, n);
}

}  // namespace mcdl::emu_selftest
