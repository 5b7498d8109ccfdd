#include "kernels/cuda/indexing.h"

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/block_reduce.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/elementwise_launch.h"

namespace mcdl::cuda {
namespace {

constexpr unsigned warp_size = 32;

// A thread's first bad position is its smallest (its positions ascend); the integer atomicMin
// makes the overall first the same whatever order the threads run in.
template <class I>
__global__ void first_invalid_index_kernel(const I* indices, int64_t count, int64_t rows,
                                           unsigned long long* first_invalid) {
  for (int64_t i = grid_index(); i < count; i += grid_stride()) {
    const int64_t index = static_cast<int64_t>(indices[i]);
    if (index < 0 || index >= rows) {
      atomicMin(first_invalid, static_cast<unsigned long long>(i));
      return;
    }
  }
}

template <class T, class I>
__global__ void gather_rows_kernel(const T* x, const I* indices, T* out, int64_t row, int64_t n) {
  for (int64_t e = grid_index(); e < n; e += grid_stride())
    out[e] = x[static_cast<int64_t>(indices[e / row]) * row + e % row];
}

// One thread per dst element: the positions of its row in order, in a double accumulator,
// exactly as the CPU kernel sums them.
template <class T>
__global__ void scatter_add_rows_kernel(const T* grad, const int64_t* row_starts, const int64_t* positions, T* dst,
                                        int64_t row, int64_t n, bool overwrite) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) {
    const int64_t r = e / row, c = e % row;
    double sum = 0;
    for (int64_t p = row_starts[r]; p < row_starts[r + 1]; ++p) sum += grad[positions[p] * row + c];
    dst[e] = overwrite ? static_cast<T>(sum) : static_cast<T>(dst[e] + sum);
  }
}

struct Min {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return b < a ? b : a; }
};

// The minimum of one value per thread over the block, to every thread (as block_sum; integers,
// so exact in any order). scratch: 32 shared int64s.
__device__ int64_t block_min(int64_t value, int64_t* scratch) {
  return block_reduce(value, int64_t{INT64_MAX}, scratch, Min{});
}

// The exclusive prefix sum of one value per thread in thread order; *total gets the block's
// sum. scratch: 33 shared int64s.
__device__ int64_t block_exclusive_scan(int64_t value, int64_t* scratch, int64_t* total) {
  const unsigned lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size, warps = blockDim.x / warp_size;
  int64_t inclusive = value;
  for (unsigned delta = 1; delta < warp_size; delta *= 2) {
    const int64_t before = __shfl_up_sync(full_warp, inclusive, delta);
    if (lane >= delta) inclusive += before;
  }
  if (lane == warp_size - 1) scratch[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {  // scans the warp totals; lanes past the last warp add nothing
    const int64_t own = lane < warps ? scratch[lane] : 0;
    int64_t running = own;
    for (unsigned delta = 1; delta < warp_size; delta *= 2) {
      const int64_t before = __shfl_up_sync(full_warp, running, delta);
      if (lane >= delta) running += before;
    }
    if (lane < warps) scratch[lane] = running - own;
    if (lane == warp_size - 1) scratch[warp_size] = running;
  }
  __syncthreads();
  const int64_t exclusive = scratch[warp] + inclusive - value;
  *total = scratch[warp_size];
  __syncthreads();  // scratch is reused by the caller's next call
  return exclusive;
}

// Block b covers mask positions [b·span, (b + 1)·span). summary[2 + b] = its selected count,
// summary[2 + max_blocks + b] = its first invalid position (or n).
__global__ void mask_count_kernel(const uint8_t* mask, int64_t n, int64_t span, int64_t* summary) {
  __shared__ int64_t scratch[warp_size];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * span, end = min(n, begin + span);
  int64_t selected = 0, invalid = n;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const uint8_t value = mask[i];
    selected += value != 0;
    if (value > 1 && invalid == n) invalid = i;
  }
  selected = block_sum(selected, scratch);
  invalid = block_min(invalid, scratch);
  if (threadIdx.x == 0) {
    summary[2 + blockIdx.x] = selected;
    summary[2 + mask_scan_max_blocks + blockIdx.x] = invalid;
  }
}

// One block: turns the per-block counts into exclusive offsets (in place) and fills summary[0]
// (total) and summary[1] (first invalid position), walking the blocks in tiles of blockDim.
__global__ void mask_offsets_kernel(int64_t n, int64_t blocks, int64_t* summary) {
  __shared__ int64_t scratch[warp_size + 1];
  int64_t carry = 0, invalid = n;
  for (int64_t base = 0; base < blocks; base += blockDim.x) {
    const int64_t b = base + threadIdx.x;
    const bool exists = b < blocks;
    int64_t tile_total = 0;
    const int64_t offset = block_exclusive_scan(exists ? summary[2 + b] : 0, scratch, &tile_total);
    if (exists) summary[2 + b] = carry + offset;
    carry += tile_total;
    invalid = min(invalid, block_min(exists ? summary[2 + mask_scan_max_blocks + b] : n, scratch));
  }
  if (threadIdx.x == 0) {
    summary[0] = carry;
    summary[1] = invalid;
  }
}

// Block b scans its span, starting from its offset, in tiles of blockDim runs of
// values_per_thread consecutive values (one block scan per tile, not per value).
constexpr int64_t values_per_thread = 8;
__global__ void mask_places_kernel(const uint8_t* mask, int64_t n, int64_t span, const int64_t* summary,
                                   int64_t* places) {
  __shared__ int64_t scratch[warp_size + 1];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * span, end = min(n, begin + span);
  int64_t carry = summary[2 + blockIdx.x];
  for (int64_t base = begin; base < end; base += blockDim.x * values_per_thread) {
    const int64_t first = min(end, base + threadIdx.x * values_per_thread), last = min(end, first + values_per_thread);
    int64_t selected = 0;
    for (int64_t i = first; i < last; ++i) selected += mask[i] != 0;
    int64_t tile_total = 0;
    int64_t place = carry + block_exclusive_scan(selected, scratch, &tile_total);
    for (int64_t i = first; i < last; ++i) places[i] = mask[i] != 0 ? place++ : -1;
    carry += tile_total;
  }
}

template <class T>
__global__ void masked_gather_rows_kernel(const T* x, const int64_t* places, T* out, int64_t row, int64_t n) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) {
    const int64_t place = places[e / row];
    if (place >= 0) out[place * row + e % row] = x[e];
  }
}

template <class T>
__global__ void masked_scatter_rows_kernel(const T* grad, const int64_t* places, T* dst, int64_t row, int64_t n,
                                           bool overwrite) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) {
    const int64_t place = places[e / row];
    if (place >= 0) {
      const T value = grad[place * row + e % row];
      dst[e] = overwrite ? value : dst[e] + value;
    } else if (overwrite) {
      dst[e] = T(0);
    }
  }
}

}  // namespace

template <class I>
void first_invalid_index(const I* indices, int64_t count, int64_t rows, int64_t* first_invalid) {
  fill(first_invalid, count, 1);
  if (count > 0)
    launch(first_invalid_index_kernel<I>, elementwise_grid(count), dim3(elementwise_block()), 0, engine_stream(),
           indices, count, rows, reinterpret_cast<unsigned long long*>(first_invalid));
}

template <class T, class I>
void gather_rows(const T* x, const I* indices, T* out, int64_t count, int64_t row) {
  const int64_t n = count * row;
  if (n > 0)
    launch(gather_rows_kernel<T, I>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), x, indices,
           out, row, n);
}

template <class T>
void scatter_add_rows(const T* grad, const int64_t* row_starts, const int64_t* positions, T* dst, int64_t rows,
                      int64_t row, bool overwrite) {
  const int64_t n = rows * row;
  if (n > 0)
    launch(scatter_add_rows_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), grad,
           row_starts, positions, dst, row, n, overwrite);
}

void mask_places(const uint8_t* mask, int64_t n, int64_t* places, int64_t* summary) {
  constexpr int64_t min_span = 2048;  // mask values per block at least, so small masks take one block
  const int64_t blocks = n == 0 ? 0 : std::min(mask_scan_max_blocks, (n + min_span - 1) / min_span);
  const int64_t span = blocks == 0 ? 0 : (n + blocks - 1) / blocks;
  const dim3 block(block_size(256));
  if (blocks > 0)
    launch(mask_count_kernel, dim3(static_cast<unsigned>(blocks)), block, 0, engine_stream(), mask, n, span, summary);
  launch(mask_offsets_kernel, dim3(1), block, 0, engine_stream(), n, blocks, summary);
  if (blocks > 0)
    launch(mask_places_kernel, dim3(static_cast<unsigned>(blocks)), block, 0, engine_stream(), mask, n, span,
           static_cast<const int64_t*>(summary), places);
}

template <class T>
void masked_gather_rows(const T* x, const int64_t* places, int64_t n, T* out, int64_t row) {
  const int64_t elements = n * row;
  if (elements > 0)
    launch(masked_gather_rows_kernel<T>, elementwise_grid(elements), dim3(elementwise_block()), 0, engine_stream(), x,
           places, out, row, elements);
}

template <class T>
void masked_scatter_rows(const T* grad, const int64_t* places, int64_t n, T* dst, int64_t row, bool overwrite) {
  const int64_t elements = n * row;
  if (elements > 0)
    launch(masked_scatter_rows_kernel<T>, elementwise_grid(elements), dim3(elementwise_block()), 0, engine_stream(),
           grad, places, dst, row, elements, overwrite);
}

#define MCDL_BITS_TYPES(X) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t)
#define MCDL_INSTANTIATE_GATHER(T)                                                             \
  template void gather_rows<T, int32_t>(const T*, const int32_t*, T*, int64_t, int64_t);        \
  template void gather_rows<T, int64_t>(const T*, const int64_t*, T*, int64_t, int64_t);        \
  template void masked_gather_rows<T>(const T*, const int64_t*, int64_t, T*, int64_t);
MCDL_BITS_TYPES(MCDL_INSTANTIATE_GATHER)
template void first_invalid_index<int32_t>(const int32_t*, int64_t, int64_t, int64_t*);
template void first_invalid_index<int64_t>(const int64_t*, int64_t, int64_t, int64_t*);
#define MCDL_INSTANTIATE_SCATTER(T)                                                                            \
  template void scatter_add_rows<T>(const T*, const int64_t*, const int64_t*, T*, int64_t, int64_t, bool); \
  template void masked_scatter_rows<T>(const T*, const int64_t*, int64_t, T*, int64_t, bool);
MCDL_INSTANTIATE_SCATTER(float)
MCDL_INSTANTIATE_SCATTER(double)

}  // namespace mcdl::cuda
