// Building blocks of the row kernels of nn.cu and loss.cu, for rows of d contiguous elements.
//  - Rows up to warp_row_limit elements: a warp per row (warp_row_first / warp_row_stride: a
//    grid-stride loop over rows, warp by warp), the row held in registers (RowRegs), so it is
//    read from memory once however many passes the op makes over it, in 16-byte packs where the
//    rows allow; reductions by xor shuffles (warp_all_sum / warp_all_max: a fixed order, the
//    same bits in every lane) without any barrier.
//  - Longer rows: one block per row (a grid-stride loop over rows), strided loops inside the
//    row (any d at any block size), block-wide sum and max (block_reduce.h) in a fixed order.
// launch_rows picks between the two. Included by .cu files only.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/block_reduce.h"
#include "kernels/cuda/device_math.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/launch_config.h"

namespace mcdl::cuda {

// Threads per row: about four elements each, 32 to 256 (the override of block_size() wins).
inline unsigned row_block(int64_t d) {
  const auto per_four = static_cast<unsigned>(std::clamp<int64_t>((d + 3) / 4, 32, 256));
  return block_size(std::bit_ceil(per_four));
}

// One block per row up to the grid limit; a kernel's block handles rows blockIdx.x,
// blockIdx.x + gridDim.x, ... (uniform per block, so barriers inside the row loop are safe).
inline dim3 row_grid(int64_t rows) { return dim3(static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65535))); }

// dst = value (overwrite) or dst += value.
template <class T>
__device__ __forceinline__ void write_grad(T& dst, T value, bool overwrite) {
  dst = overwrite ? value : dst + value;
}

// log Σ exp(x) of one row of d elements, the row maximum subtracted first so no exp overflows
// (as cpu::row_log_sum_exp). Every thread of the block calls it and gets the value.
template <class T>
__device__ T row_log_sum_exp(const T* x, int64_t d, T* scratch) {
  T top = -INFINITY;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) top = max_of(top, x[c]);
  top = block_max(top, scratch);
  T sum = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) sum += exp_of(x[c] - top);
  return top + log_of(block_sum(sum, scratch));
}

// ---- a warp per row ------------------------------------------------------------------------------

// Rows up to this many elements go to the warp-per-row kernels.
constexpr int64_t warp_row_limit = 1024;

// The warp's first row and the row stride of the grid-stride loop over rows (uniform per warp,
// so the shuffles inside see all 32 lanes).
__device__ __forceinline__ int64_t warp_row_first() {
  return static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
}
__device__ __forceinline__ int64_t warp_row_stride() { return static_cast<int64_t>(gridDim.x) * (blockDim.x / 32); }

// Runs process(r, data) with data = load(r) for the warp's rows r (the grid-stride loop over
// rows). With `prefetch`, the warp loads its next row before it processes the current one, so
// that row's loads are in flight during the reductions and the math: a short row (E <= 8, 1 KB
// per warp, e.g. attention scores of 197) alone keeps too few bytes in flight per SM to reach
// the copy bandwidth, two of them do. Costs the registers of a second row.
template <bool prefetch, class Load, class Process>
__device__ __forceinline__ void for_warp_rows(int64_t rows, Load load, Process process) {
  const int64_t stride = warp_row_stride();
  int64_t r = warp_row_first();
  if constexpr (prefetch) {
    if (r >= rows) return;
    auto data = load(r);
    for (; r < rows; r += stride) {
      decltype(data) next{};
      if (r + stride < rows) next = load(r + stride);
      process(r, data);
      data = next;
    }
  } else {
    for (; r < rows; r += stride) {
      auto data = load(r);
      process(r, data);
    }
  }
}


// Whether a warp kernel holding E elements of a row per lane prefetches (for_warp_rows).
template <int E>
inline constexpr bool prefetch_rows = E <= 8;

// One lane's share of a row in registers: packs lane, lane + 32, ... (N = E / W of them, E the
// elements a lane holds at most) of W elements each. W = pack_width<T> (16-byte loads) needs
// d % W == 0 and 16-byte aligned row pointers; W = 1 takes any row.
template <class T, int W, int E>
struct RowRegs {
  static constexpr int packs_per_lane = E / W;
  static_assert(packs_per_lane * W == E, "a lane holds whole packs");
  Pack<T, W> pack[packs_per_lane];

  // Whether slot k holds a pack of the row (rows shorter than 32·E leave slots empty).
  __device__ static bool valid(int k, int64_t packs) { return threadIdx.x % 32 + 32 * k < packs; }
  // The element offset of slot k within the row.
  __device__ static int64_t offset(int k) { return (threadIdx.x % 32 + 32 * static_cast<int64_t>(k)) * W; }

  // Loads the lane's packs of `row` (packs = d / W); empty slots get zeros. All loads are
  // independent and issued together.
  __device__ void load(const T* row, int64_t packs) {
    MCDL_UNROLL
    for (int k = 0; k < packs_per_lane; ++k) pack[k] = valid(k, packs) ? load_pack<W>(row + offset(k)) : Pack<T, W>{};
  }
  __device__ void store(T* row, int64_t packs) const {
    MCDL_UNROLL
    for (int k = 0; k < packs_per_lane; ++k)
      if (valid(k, packs)) store_pack<W>(row + offset(k), pack[k]);
  }
  // The largest of the lane's elements of the row (-inf for none; NaN ignored, fmax_of).
  __device__ T max(int64_t packs) const {
    T top = -INFINITY;
    MCDL_UNROLL
    for (int k = 0; k < packs_per_lane; ++k) {
      if (!valid(k, packs)) continue;
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) top = fmax_of(top, pack[k].v[j]);
    }
    return top;
  }
  // Σ f(element) over the lane's elements of the row (empty slots skipped).
  template <class F>
  __device__ T sum(int64_t packs, F f) const {
    T total = 0;
    MCDL_UNROLL
    for (int k = 0; k < packs_per_lane; ++k) {
      if (!valid(k, packs)) continue;
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) total += f(pack[k].v[j]);
    }
    return total;
  }
  // The lane's elements of the gradient row `grad` (=|+=) value(k, j), for element j of slot k,
  // a pack at a time.
  template <class F>
  __device__ static void store_grad(T* grad, int64_t packs, bool overwrite, F value) {
    MCDL_UNROLL
    for (int k = 0; k < packs_per_lane; ++k) {
      if (!valid(k, packs)) continue;
      T* dst = grad + offset(k);
      Pack<T, W> out = overwrite ? Pack<T, W>{} : load_pack<W>(dst);
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) write_grad(out.v[j], value(k, j), overwrite);
      store_pack<W>(dst, out);
    }
  }
};

// Two rows of a warp kernel (x and the output gradient, say), as for_warp_rows data.
template <class Row>
struct TwoRows {
  Row first, second;
};

// Runs process(r, row) for the warp's rows r of x (rows of d elements), each held in a
// RowRegs<T, W, E> (for_warp_rows, prefetching per prefetch_rows).
template <int W, int E, class T, class Process>
__device__ __forceinline__ void for_warp_rows_of(const T* x, int64_t rows, int64_t d, Process process) {
  using Row = RowRegs<T, W, E>;
  const int64_t packs = d / W;
  const auto load = [=](int64_t r) {
    Row row;
    row.load(x + r * d, packs);
    return row;
  };
  for_warp_rows<prefetch_rows<E>>(rows, load, process);
}

// The same over row r of a and of b at once: process(r, a_row, b_row).
template <int W, int E, class T, class Process>
__device__ __forceinline__ void for_warp_rows_of(const T* a, const T* b, int64_t rows, int64_t d, Process process) {
  using Row = RowRegs<T, W, E>;
  const int64_t packs = d / W;
  const auto load = [=](int64_t r) {
    TwoRows<Row> loaded;
    loaded.first.load(a + r * d, packs);
    loaded.second.load(b + r * d, packs);
    return loaded;
  };
  for_warp_rows<prefetch_rows<E>>(rows, load,
                                  [&](int64_t r, TwoRows<Row>& loaded) { process(r, loaded.first, loaded.second); });
}

// log Σ exp(x) of the row in `row` (packs = d / W), the row maximum subtracted first so no
// exp overflows, to every lane of the warp.
template <class T, int W, int E>
__device__ T warp_row_log_sum_exp(const RowRegs<T, W, E>& row, int64_t packs) {
  const T top = warp_all_max(row.max(packs));
  return top + log_of(warp_all_sum(row.sum(packs, [top](T v) { return exp_of(v - top); })));
}

// The budget E (elements per lane) for rows of d <= warp_row_limit elements: the smallest of
// 8, 16, 24, 32 with 32·E >= d, so short rows do not pay for registers they do not use.
// Calls f(std::integral_constant<int, W>, std::integral_constant<int, E>) with the pack width
// W: pack_width<T> when `aligned` (every row pointer 16-byte aligned) and d % W == 0, else 1.
template <class T, class F>
void with_row_regs(int64_t d, bool aligned, F&& f) {
  auto with_budget = [&](auto width) {
    if (d <= 32 * 8) {
      f(width, std::integral_constant<int, 8>{});
    } else if (d <= 32 * 16) {
      f(width, std::integral_constant<int, 16>{});
    } else if (d <= 32 * 24) {
      f(width, std::integral_constant<int, 24>{});
    } else {
      f(width, std::integral_constant<int, 32>{});
    }
  };
  if (aligned && d % pack_width<T> == 0) {
    with_budget(std::integral_constant<int, pack_width<T>>{});
  } else {
    with_budget(std::integral_constant<int, 1>{});
  }
}

// Grid of a warp-per-row kernel over `rows` rows: a row per warp and trip, balanced over one
// wave of resident blocks (balanced_grid).
template <auto kernel>
dim3 warp_rows_grid(int64_t rows, unsigned block) {
  return balanced_grid(rows * 32, block, resident_blocks<kernel>(block));
}

// Block size of the warp-per-row kernels.
inline unsigned warp_rows_block() { return block_size(256); }

// A kernel pointer as a type, so that launch_warp_rows can pick it at compile time.
template <auto kernel>
using KernelConstant = std::integral_constant<decltype(kernel), kernel>;

// A warp kernel's choice of registers as a type: pack width W, E elements per lane.
template <int W, int E>
struct RegsLayout {};

// Launches the warp-per-row kernel that kernel_for(RegsLayout<W, E>) names (a KernelConstant;
// kernel_for is a lambda []<int W, int E>(RegsLayout<W, E>) {...}), over `rows` rows of
// d <= warp_row_limit elements, with args. `aligned`: every row pointer is 16-byte aligned.
template <class T, class KernelFor, class... Args>
void launch_warp_rows(int64_t rows, int64_t d, bool aligned, KernelFor kernel_for, Args... args) {
  with_row_regs<T>(d, aligned, [&](auto width, auto budget) {
    constexpr auto kernel =
        decltype(kernel_for(RegsLayout<decltype(width)::value, decltype(budget)::value>{}))::value;
    const unsigned block = fitting_block<kernel>(warp_rows_block());
    launch(kernel, warp_rows_grid<kernel>(rows, block), dim3(block), 0, engine_stream(), args...);
  });
}

// Launches a row op over `rows` rows of d elements with args: the warp-per-row kernel of
// kernel_for (launch_warp_rows) when d <= warp_row_limit, else block_kernel, a block per row.
template <class T, auto block_kernel, class KernelFor, class... Args>
void launch_rows(int64_t rows, int64_t d, bool aligned, KernelFor kernel_for, Args... args) {
  if (rows == 0) return;
  if (d <= warp_row_limit) {
    launch_warp_rows<T>(rows, d, aligned, kernel_for, args...);
  } else {
    launch(block_kernel, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), args...);
  }
}

}  // namespace mcdl::cuda
