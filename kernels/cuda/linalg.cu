#include "kernels/cuda/linalg.h"

#include "kernels/cuda/block_reduce.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/runtime.h"

namespace mcdl::cuda {
namespace {

template <class T>
__global__ void broadcast_rows_kernel(const T* bias, T* out, int64_t n, int64_t cols) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) out[i] = bias[i % cols];
}

// out [B, O, L] = bias[o] in channel o.
template <class T>
__global__ void fill_channels_kernel(const T* bias, T* out, int64_t n, int64_t channels, int64_t spatial) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) out[i] = bias[(i / spatial) % channels];
}

// One block per group g: out[g] (=|+=) Σ_{o < outer} Σ_{i < inner} in[o·outer_stride +
// g·group_stride + i·inner_stride]. Each thread sums a fixed subset in order, then the block
// reduces in a fixed tree: deterministic, no atomics.
template <class T>
__global__ void group_sums_kernel(const T* in, T* out, int64_t outer, int64_t outer_stride, int64_t group_stride,
                                  int64_t inner, int64_t inner_stride, bool overwrite) {
  __shared__ T scratch[32];
  const int64_t group = blockIdx.x, count = outer * inner;
  T partial = T(0);
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
    partial += in[(j / inner) * outer_stride + group * group_stride + (j % inner) * inner_stride];
  const T total = block_sum(partial, scratch);
  if (threadIdx.x == 0) out[group] = overwrite ? total : out[group] + total;
}

template <class T>
void group_sums(const T* in, T* out, int64_t groups, int64_t outer, int64_t outer_stride, int64_t group_stride,
                int64_t inner, int64_t inner_stride, bool overwrite) {
  if (groups == 0) return;
  launch(group_sums_kernel<T>, dim3(static_cast<unsigned>(groups)), dim3(block_size(256)), 0, engine_stream(), in,
         out, outer, outer_stride, group_stride, inner, inner_stride, overwrite);
}

// Column sums in two passes, reading rows coalesced: pass 1 gives each (chunk of
// column_chunk_rows rows, column) a partial sum — threadIdx.x % 32 picks the column within a
// tile of 32, threadIdx.x / 32 strides over the chunk's rows, and the row lanes are added in
// lane order; pass 2 adds a column's partials in chunk order. (One block per column read the
// rows with a stride of a whole row: 3-4x slower for the linear layers' bias gradients.)
constexpr int64_t column_chunk_rows = 256;

template <class T>
__global__ void column_partials_kernel(const T* in, T* partial, int64_t rows, int64_t cols) {
  __shared__ T lanes[32][33];  // [row lane][column], padded against bank conflicts
  const unsigned tx = threadIdx.x % 32, ty = threadIdx.x / 32, row_lanes = blockDim.x / 32;
  const int64_t column = static_cast<int64_t>(blockIdx.x) * 32 + tx, chunk = blockIdx.y;
  const int64_t first = chunk * column_chunk_rows;
  const int64_t last = first + column_chunk_rows < rows ? first + column_chunk_rows : rows;
  T sum = T(0);
  if (column < cols)
    for (int64_t r = first + ty; r < last; r += row_lanes) sum += in[r * cols + column];
  lanes[ty][tx] = sum;
  __syncthreads();
  if (ty == 0 && column < cols) {
    T total = T(0);
    for (unsigned lane = 0; lane < row_lanes; ++lane) total += lanes[lane][tx];
    partial[chunk * cols + column] = total;
  }
}

template <class T>
__global__ void column_combine_kernel(const T* partial, T* out, int64_t chunks, int64_t cols, bool overwrite) {
  for (int64_t column = grid_index(); column < cols; column += grid_stride()) {
    T total = T(0);
    for (int64_t chunk = 0; chunk < chunks; ++chunk) total += partial[chunk * cols + column];
    out[column] = overwrite ? total : out[column] + total;
  }
}

// One thread per element of cols: reads the matching pixel of x.
template <class T>
__global__ void im2col_kernel(const T* x, T* cols, PatchGrid g, int64_t n) {
  const int64_t p = g.patch, k = g.patch_size();
  for (int64_t e = grid_index(); e < n; e += grid_stride()) {
    const int64_t row = e / k, within = e % k;  // row = b·L + patch, within = (c, kh, kw)
    const int64_t b = row / g.patches(), patch = row % g.patches();
    const int64_t i = patch / g.cols(), j = patch % g.cols();
    const int64_t c = within / (p * p), kh = (within / p) % p, kw = within % p;
    cols[e] = x[((b * g.channels + c) * g.height + i * p + kh) * g.width + j * p + kw];
  }
}

// One thread per pixel of x: patches do not overlap, so each pixel has exactly one source.
template <class T>
__global__ void col2im_kernel(const T* cols, T* x, PatchGrid g, int64_t n, bool overwrite) {
  const int64_t p = g.patch, k = g.patch_size();
  for (int64_t e = grid_index(); e < n; e += grid_stride()) {
    const int64_t w = e % g.width, h = (e / g.width) % g.height, c = (e / (g.width * g.height)) % g.channels,
                  b = e / (g.width * g.height * g.channels);
    const int64_t patch = (h / p) * g.cols() + w / p;
    const T value = cols[(b * g.patches() + patch) * k + (c * p + h % p) * p + w % p];
    x[e] = overwrite ? value : x[e] + value;
  }
}

}  // namespace

template <class T>
void broadcast_rows(const T* bias, T* out, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  if (n > 0)
    launch(broadcast_rows_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), bias, out, n,
           cols);
}

template <class T>
void fill_channels(const T* bias, T* out, int64_t batch, int64_t channels, int64_t spatial) {
  const int64_t n = batch * channels * spatial;
  if (n > 0)
    launch(fill_channels_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), bias, out, n,
           channels, spatial);
}

template <class T>
void column_sums(const T* in, T* out, int64_t rows, int64_t cols, bool overwrite) {
  if (cols == 0) return;
  const int64_t chunks = rows == 0 ? 1 : (rows + column_chunk_rows - 1) / column_chunk_rows;
  const unsigned threads = std::min(block_size(256), 1024u);
  T* partial = static_cast<T*>(device_alloc(static_cast<size_t>(chunks * cols) * sizeof(T)));
  if (rows == 0) {
    fill_bytes(partial, 0, static_cast<size_t>(cols) * sizeof(T));
  } else {
    launch(column_partials_kernel<T>, dim3(blocks_for(cols, 32), static_cast<unsigned>(chunks)), dim3(threads), 0,
           engine_stream(), in, partial, rows, cols);
  }
  launch(column_combine_kernel<T>, elementwise_grid(cols), dim3(elementwise_block()), 0, engine_stream(), partial, out,
         chunks, cols, overwrite);
  device_free(partial);  // stream-ordered: freed after the combine has run
}

template <class T>
void channel_sums(const T* grad, T* out, int64_t batch, int64_t channels, int64_t spatial, bool overwrite) {
  group_sums(grad, out, channels, batch, channels * spatial, spatial, spatial, int64_t(1), overwrite);
}

template <class T>
void im2col_patches(const T* x, T* cols, const PatchGrid& grid) {
  const int64_t n = grid.batch * grid.patches() * grid.patch_size();
  if (n > 0)
    launch(im2col_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), x, cols, grid, n);
}

template <class T>
void col2im_patches(const T* cols, T* x, const PatchGrid& grid, bool overwrite) {
  const int64_t n = grid.batch * grid.channels * grid.height * grid.width;
  if (n > 0)
    launch(col2im_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), cols, x, grid, n,
           overwrite);
}

#define MCDL_INSTANTIATE_LINALG(T)                                                          \
  template void broadcast_rows<T>(const T*, T*, int64_t, int64_t);                          \
  template void fill_channels<T>(const T*, T*, int64_t, int64_t, int64_t);                  \
  template void column_sums<T>(const T*, T*, int64_t, int64_t, bool);                       \
  template void channel_sums<T>(const T*, T*, int64_t, int64_t, int64_t, bool);            \
  template void im2col_patches<T>(const T*, T*, const PatchGrid&);                          \
  template void col2im_patches<T>(const T*, T*, const PatchGrid&, bool);
MCDL_INSTANTIATE_LINALG(float)
MCDL_INSTANTIATE_LINALG(double)

}  // namespace mcdl::cuda
