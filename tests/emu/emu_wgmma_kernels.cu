// Kernels that run kernels/cuda/wgmma.h's warpgroup product on operands placed by the PTX ISA's
// layouts, with their host launchers; tests/emu/test_wgmma.cpp checks them against a plain
// product, so the emulated wgmma follows the documented layouts (the wgmma attention relies on it).
#include "kernels/cuda/mma.h"
#include "kernels/cuda/wgmma.h"

namespace mcdl::emu_selftest {

constexpr unsigned shared_bytes = 2048;  // the tile launch's dynamic shared memory

// The byte offset of B [k][n] in shared memory without swizzle: 8×8 core matrices of 128 bytes,
// `leading` bytes apart along K and `stride` bytes apart along N; within one, 16-byte rows along
// K (K-major B) or along N (MN-major B, transposed).
__device__ unsigned b_offset(int k, int n, bool transpose_b, unsigned leading, unsigned stride) {
  const unsigned inner = transpose_b ? (k % 8) * 16 + (n % 8) * 2 : (n % 8) * 16 + (k % 8) * 2;
  return static_cast<unsigned>(k / 8) * leading + static_cast<unsigned>(n / 8) * stride + inner;
}

// d [64×64] (+)= a [64×16] · b [16×64], all row-major in global memory, one warpgroup: b staged as
// above, each lane loading and storing only its own A and D elements where the layout says they
// are. early [64×64] gets each accumulator as the thread reads it between the issue and the wait.
__global__ void wgmma_tile(const bf16* a, const bf16* b, float* d, float* early, bool transpose_b, bool accumulate,
                           unsigned leading, unsigned stride, bool skip_fence, bool skip_publish, bool swizzle) {
  MCDL_DYNAMIC_SHARED(unsigned char, shared);
  const int thread = static_cast<int>(threadIdx.x), warp = thread / 32, lane = thread % 32, g = lane / 4, t = lane % 4;
  for (int i = thread; i < 16 * 64; i += 128)
    if (const unsigned offset = b_offset(i / 64, i % 64, transpose_b, leading, stride); offset < shared_bytes)
      *reinterpret_cast<bf16*>(shared + offset) = b[i];  // a placement past the launch's bytes stages what fits
  cuda::WarpgroupMma mma;
  if (!skip_publish) mma.publish_shared_writes();
  __syncthreads();
  const int row = 16 * warp + g;
  const auto at = [&](int r, int k) { return a[r * 16 + k]; };
  const uint32_t fa[4] = {cuda::pair_bits(at(row, 2 * t), at(row, 2 * t + 1)),
                          cuda::pair_bits(at(row + 8, 2 * t), at(row + 8, 2 * t + 1)),
                          cuda::pair_bits(at(row, 2 * t + 8), at(row, 2 * t + 9)),
                          cuda::pair_bits(at(row + 8, 2 * t + 8), at(row + 8, 2 * t + 9))};
  const auto index = [&](int i) { return (row + 8 * (i % 4 / 2)) * 64 + 8 * (i / 4) + 2 * t + i % 2; };
  float fd[32];
  for (int i = 0; i < 32; ++i) fd[i] = d[index(i)];
  if (!skip_fence) mma.fence();
  uint64_t descriptor = cuda::shared_matrix_descriptor(shared, leading, stride);
  if (swizzle) descriptor |= uint64_t{1} << 62;  // 128-byte swizzle
  if (transpose_b)
    mma.m64n64k16<true>(fd, fa, descriptor, accumulate);
  else
    mma.m64n64k16<false>(fd, fa, descriptor, accumulate);
  mma.commit();
  for (int i = 0; i < 32; ++i) early[index(i)] = fd[i];
  mma.wait<0>();
  cuda::WarpgroupMma::hold(fd);
  for (int i = 0; i < 32; ++i) d[index(i)] = fd[i];
}

void launch_wgmma_tile(const bf16* a, const bf16* b, float* d, float* early, bool transpose_b, bool accumulate,
                       unsigned leading, unsigned stride, bool skip_fence, bool skip_publish, bool swizzle) {
  cuda::launch(wgmma_tile, 1, 128, shared_bytes, nullptr, a, b, d, early, transpose_b, accumulate, leading, stride, skip_fence,
               skip_publish, swizzle);
}

// A descriptor made of a pointer to global memory, which has no shared-window address.
__global__ void descriptor_of_global(const bf16* global, uint64_t* out) {
  out[threadIdx.x] = cuda::shared_matrix_descriptor(global, 128, 256);
}

void launch_descriptor_of_global(const bf16* global, uint64_t* out) {
  cuda::launch(descriptor_of_global, 1, 32, shared_bytes, nullptr, global, out);
}

// A kernel that only touches its dynamic shared memory, to launch with more than 48 KB of it.
__global__ void touch_shared(int* out) {
  MCDL_DYNAMIC_SHARED(int, shared);
  shared[threadIdx.x] = 1;
  out[threadIdx.x] = shared[threadIdx.x];
}

void launch_touch_shared(int* out, size_t bytes, bool opt_in) {
  if (opt_in)
    MCDL_CUDA_CHECK(cudaFuncSetAttribute(touch_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
  cuda::launch(touch_shared, 1, 32, bytes, nullptr, out);
}

}  // namespace mcdl::emu_selftest
