#include "kernels/cuda/shape.h"

#include <algorithm>
#include <vector>

#include "kernels/cuda/elementwise_launch.h"
#include "kernels/permute_runs.h"

namespace mcdl::cuda {
namespace {

// A permutation as the kernels see it: dst axis d has dst_shape[d] positions, dst_stride[d]
// elements apart in dst and src_stride[d] elements apart in src.
struct PermuteGeometry {
  int rank = 0;
  int64_t dst_shape[max_permute_rank];
  int64_t dst_stride[max_permute_rank];
  int64_t src_stride[max_permute_rank];
};

PermuteGeometry permute_geometry(const int64_t* src_shape, const int64_t* perm, int64_t rank) {
  const PermuteRuns runs = permute_runs(src_shape, perm, rank);
  PermuteGeometry g;
  g.rank = static_cast<int>(runs.dst_shape.size());
  for (int d = 0; d < g.rank; ++d) {
    g.dst_shape[d] = runs.dst_shape[static_cast<size_t>(d)];
    g.src_stride[d] = runs.src_stride[static_cast<size_t>(d)];
  }
  g.dst_stride[g.rank - 1] = 1;
  for (int d = g.rank - 2; d >= 0; --d) g.dst_stride[d] = g.dst_stride[d + 1] * g.dst_shape[d + 1];
  return g;
}

// One thread per dst element (writes coalesced; reads too when the last dst axis is the last
// src axis).
template <class T>
__global__ void permute_gather_kernel(const T* src, T* dst, PermuteGeometry g, int64_t n, bool overwrite) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    int64_t rest = i, offset = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      offset += (rest % g.dst_shape[d]) * g.src_stride[d];
      rest /= g.dst_shape[d];
    }
    const T value = src[offset];
    dst[i] = overwrite ? value : dst[i] + value;
  }
}

constexpr int tile = 32;

// When the last dst axis is not the last src axis: 32 x 32 tiles through shared memory, read
// along the src-contiguous dst axis `a` and written along the last dst axis `b`, so both sides
// are coalesced. Threads form blockDim.x / 32 rows of 32 lanes; each block loops over tiles
// (the loop bound is the same for all its threads, so every thread reaches the barriers).
template <class T>
__global__ void permute_tiled_kernel(const T* src, T* dst, PermuteGeometry g, int a_axis, int64_t tiles_a,
                                     int64_t tiles_b, int64_t tiles, bool overwrite) {
  __shared__ T buffer[tile][tile + 1];
  const int lane = static_cast<int>(threadIdx.x % tile), first_row = static_cast<int>(threadIdx.x / tile);
  const int row_step = static_cast<int>(blockDim.x / tile), b_axis = g.rank - 1;
  const int64_t size_a = g.dst_shape[a_axis], size_b = g.dst_shape[b_axis];
  const int64_t dst_stride_a = g.dst_stride[a_axis], src_stride_b = g.src_stride[b_axis];
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t rest = t;
    const int64_t b0 = (rest % tiles_b) * tile;
    rest /= tiles_b;
    const int64_t a0 = (rest % tiles_a) * tile;
    rest /= tiles_a;
    int64_t src_base = 0, dst_base = 0;  // the other dst axes
    for (int d = b_axis - 1; d >= 0; --d) {
      if (d == a_axis) continue;
      const int64_t position = rest % g.dst_shape[d];
      rest /= g.dst_shape[d];
      src_base += position * g.src_stride[d];
      dst_base += position * g.dst_stride[d];
    }
    for (int r = first_row; r < tile; r += row_step) {
      const int64_t a = a0 + lane, b = b0 + r;
      if (a < size_a && b < size_b) buffer[r][lane] = src[src_base + a + b * src_stride_b];
    }
    __syncthreads();
    for (int r = first_row; r < tile; r += row_step) {
      const int64_t a = a0 + r, b = b0 + lane;
      if (a < size_a && b < size_b) {
        T& out = dst[dst_base + a * dst_stride_a + b];
        const T value = buffer[lane][r];
        out = overwrite ? value : out + value;
      }
    }
    __syncthreads();  // the next tile overwrites the buffer
  }
}

template <class T>
__global__ void copy_axis_block_kernel(const T* src, int64_t src_axis, int64_t src_start, T* dst, int64_t dst_axis,
                                       int64_t dst_start, int64_t count, int64_t inner, int64_t n, bool overwrite) {
  const int64_t block = count * inner;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const int64_t o = i / block, k = i % block;
    const T value = src[(o * src_axis + src_start) * inner + k];
    T& out = dst[(o * dst_axis + dst_start) * inner + k];
    out = overwrite ? value : out + value;
  }
}

// Overwrite mode: every dst element, zero outside the sliced positions.
template <class T>
__global__ void slice_backward_kernel(const T* grad, T* dst, int64_t axis, int64_t start, int64_t count,
                                      int64_t inner, int64_t n) {
  const int64_t row = axis * inner;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const int64_t o = i / row, k = i % row, position = k / inner;
    dst[i] = position >= start && position < start + count ? grad[(o * count + position - start) * inner + k % inner]
                                                           : T(0);
  }
}

}  // namespace

template <class T>
void permute(const T* src, T* dst, const int64_t* src_shape, const int64_t* perm, int64_t rank, bool overwrite) {
  const PermuteGeometry g = permute_geometry(src_shape, perm, rank);
  int64_t n = 1;
  for (int d = 0; d < g.rank; ++d) n *= g.dst_shape[d];
  if (n == 0) return;
  const int b_axis = g.rank - 1;
  int a_axis = -1;  // the dst axis that is contiguous in src, when it is not the last dst axis
  for (int d = 0; d < b_axis; ++d)
    if (g.src_stride[d] == 1) a_axis = d;
  // Narrow src runs read little more than a gather does: tile only when a tile row is mostly used.
  if (a_axis < 0 || g.dst_shape[a_axis] < tile / 2) {
    launch(permute_gather_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), src, dst, g,
           n, overwrite);
    return;
  }
  const int64_t tiles_a = (g.dst_shape[a_axis] + tile - 1) / tile, tiles_b = (g.dst_shape[b_axis] + tile - 1) / tile;
  const int64_t tiles = n / (g.dst_shape[a_axis] * g.dst_shape[b_axis]) * tiles_a * tiles_b;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiles, 4096));
  launch(permute_tiled_kernel<T>, dim3(grid), dim3(block_size(256)), 0, engine_stream(), src, dst, g, a_axis, tiles_a,
         tiles_b, tiles, overwrite);
}

template <class T>
void copy_axis_block(const T* src, int64_t src_axis, int64_t src_start, T* dst, int64_t dst_axis, int64_t dst_start,
                     int64_t outer, int64_t count, int64_t inner, bool overwrite) {
  const int64_t n = outer * count * inner;
  if (n == 0) return;
  launch(copy_axis_block_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), src, src_axis,
         src_start, dst, dst_axis, dst_start, count, inner, n, overwrite);
}

template <class T>
void slice_backward(const T* grad, T* dst, int64_t outer, int64_t axis, int64_t start, int64_t count, int64_t inner,
                    bool overwrite) {
  if (!overwrite) {  // only the sliced positions change
    copy_axis_block(grad, count, 0, dst, axis, start, outer, count, inner, false);
    return;
  }
  const int64_t n = outer * axis * inner;
  if (n == 0) return;
  launch(slice_backward_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), grad, dst, axis,
         start, count, inner, n);
}

// The unsigned widths carry every dtype forward; float and double carry gradients.
#define MCDL_SHAPE_TYPES(X) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t) X(float) X(double)
#define MCDL_INSTANTIATE_SHAPE(T)                                                                                 \
  template void permute<T>(const T*, T*, const int64_t*, const int64_t*, int64_t, bool);                         \
  template void copy_axis_block<T>(const T*, int64_t, int64_t, T*, int64_t, int64_t, int64_t, int64_t, int64_t, \
                                   bool);                                                                        \
  template void slice_backward<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, bool);
MCDL_SHAPE_TYPES(MCDL_INSTANTIATE_SHAPE)

}  // namespace mcdl::cuda
