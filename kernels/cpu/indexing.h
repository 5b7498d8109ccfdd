// Row gathers and scatters on raw host buffers: index_select, masked_select and their
// gradients. A "row" is the block of `row` contiguous elements behind one leading index.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {

// *first_invalid = the position of the first index outside [0, rows), or `count` when all are
// valid.
template <class I>
void first_invalid_index(const I* indices, int64_t count, int64_t rows, int64_t* first_invalid) {
  int64_t i = 0;
  while (i < count && indices[i] >= 0 && static_cast<int64_t>(indices[i]) < rows) ++i;
  *first_invalid = i;
}

// out[i, :] = x[indices[i], :] for i in [0, count). Indices must be valid.
template <class T, class I>
void gather_rows(const T* x, const I* indices, T* out, int64_t count, int64_t row) {
  parallel_rows(count, row, [&](int64_t i) {
    const T* from = x + static_cast<int64_t>(indices[i]) * row;
    std::copy(from, from + row, out + i * row);
  });
}

// dst[r, :] (=|+=) Σ grad[positions[p], :] over p in [row_starts[r], row_starts[r + 1]), summed
// in double in that order (the positions of index_select's indices grouped by target row,
// ascending within a row), so repeated indices give the same result for any thread count. dst
// has `rows` rows; in overwrite mode rows that no position names become zero.
template <class T>
void scatter_add_rows(const T* grad, const int64_t* row_starts, const int64_t* positions, T* dst, int64_t rows,
                      int64_t row, bool overwrite) {
  constexpr int64_t chunk = 256;  // columns summed together in a double accumulator
  const int64_t count = row_starts[rows];
  const int64_t row_cost = row * (1 + count / std::max<int64_t>(rows, 1));
  parallel_rows(rows, row_cost, [&](int64_t r) {
    T* out = dst + r * row;
    for (int64_t c0 = 0; c0 < row; c0 += chunk) {
      const int64_t width = std::min(chunk, row - c0);
      double acc[chunk] = {};
      for (int64_t p = row_starts[r]; p < row_starts[r + 1]; ++p) {
        const T* g = grad + positions[p] * row + c0;
        for (int64_t c = 0; c < width; ++c) acc[c] += g[c];
      }
      for (int64_t c = 0; c < width; ++c)
        out[c0 + c] = overwrite ? static_cast<T>(acc[c]) : static_cast<T>(out[c0 + c] + acc[c]);
    }
  });
}

// The int64s of `summary` mask_places writes (the CUDA twin also scans in it).
inline constexpr int64_t mask_summary_size = 2;

// For each of n mask values its place among the selected (non-zero) ones, or -1: places[n].
// summary[0] = the number selected, summary[1] = the position of the first value other than
// 0 or 1, or n when all are valid.
inline void mask_places(const uint8_t* mask, int64_t n, int64_t* places, int64_t* summary) {
  int64_t selected = 0, first_invalid = n;
  for (int64_t i = 0; i < n; ++i) {
    if (mask[i] > 1 && first_invalid == n) first_invalid = i;
    places[i] = mask[i] ? selected++ : -1;
  }
  summary[0] = selected;
  summary[1] = first_invalid;
}

// out[places[i], :] = x[i, :] for the selected rows i of n (places from mask_places).
template <class T>
void masked_gather_rows(const T* x, const int64_t* places, int64_t n, T* out, int64_t row) {
  parallel_rows(n, row, [&](int64_t i) {
    if (places[i] >= 0) std::copy(x + i * row, x + (i + 1) * row, out + places[i] * row);
  });
}

// dst[i, :] (=|+=) grad[places[i], :] for the selected rows; in overwrite mode the other rows
// become zero, in accumulate mode they are left as they are.
template <class T>
void masked_scatter_rows(const T* grad, const int64_t* places, int64_t n, T* dst, int64_t row, bool overwrite) {
  parallel_rows(n, row, [&](int64_t i) {
    T* out = dst + i * row;
    if (places[i] < 0) {
      if (overwrite) std::fill(out, out + row, T(0));
      return;
    }
    const T* g = grad + places[i] * row;
    for (int64_t c = 0; c < row; ++c) out[c] = overwrite ? g[c] : out[c] + g[c];
  });
}

}  // namespace mcdl::cpu
