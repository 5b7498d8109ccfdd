// Row gathers and scatters on raw host buffers: index_select, masked_select and their
// gradients. A "row" is the block of `row` contiguous elements behind one leading index.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {

// Position of the first index outside [0, rows), or -1 when all are valid.
template <class I>
int64_t first_invalid_index(const I* indices, int64_t count, int64_t rows) {
  for (int64_t i = 0; i < count; ++i)
    if (indices[i] < 0 || static_cast<int64_t>(indices[i]) >= rows) return i;
  return -1;
}

// out[i, :] = x[indices[i], :] for i in [0, count). Indices must be valid.
template <class T, class I>
void gather_rows(const T* x, const I* indices, T* out, int64_t count, int64_t row) {
  parallel_rows(count, row, [&](int64_t i) {
    const T* from = x + static_cast<int64_t>(indices[i]) * row;
    std::copy(from, from + row, out + i * row);
  });
}

// dst[r, :] (=|+=) Σ grad[i, :] over the positions i with indices[i] == r, summed in double in
// position order, so repeated indices give the same result for any thread count. dst has
// `rows` rows; in overwrite mode rows that no index names become zero.
template <class T, class I>
void scatter_add_rows(const T* grad, const I* indices, T* dst, int64_t count, int64_t rows, int64_t row,
                      bool overwrite) {
  // Positions grouped by target row, in order (a stable counting sort).
  std::vector<int64_t> start(static_cast<size_t>(rows + 1), 0), positions(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) ++start[static_cast<size_t>(indices[i]) + 1];
  for (int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < count; ++i) positions[next[static_cast<size_t>(indices[i])]++] = i;

  constexpr int64_t chunk = 256;  // columns summed together in a double accumulator
  const int64_t row_cost = row * (1 + count / std::max<int64_t>(rows, 1));
  parallel_rows(rows, row_cost, [&](int64_t r) {
    T* out = dst + r * row;
    for (int64_t c0 = 0; c0 < row; c0 += chunk) {
      const int64_t width = std::min(chunk, row - c0);
      double acc[chunk] = {};
      for (int64_t p = start[r]; p < start[r + 1]; ++p) {
        const T* g = grad + positions[p] * row + c0;
        for (int64_t c = 0; c < width; ++c) acc[c] += g[c];
      }
      for (int64_t c = 0; c < width; ++c)
        out[c0 + c] = overwrite ? static_cast<T>(acc[c]) : static_cast<T>(out[c0 + c] + acc[c]);
    }
  });
}

// Position of the first mask value other than 0 or 1, or -1 when all are valid.
inline int64_t first_invalid_mask(const uint8_t* mask, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (mask[i] > 1) return i;
  return -1;
}

// For each of n rows, its place among the selected rows (or -1 when not selected); returns
// the places and, through `selected`, how many rows the mask selects.
inline std::vector<int64_t> mask_places(const uint8_t* mask, int64_t n, int64_t& selected) {
  std::vector<int64_t> places(static_cast<size_t>(n));
  selected = 0;
  for (int64_t i = 0; i < n; ++i) places[i] = mask[i] ? selected++ : -1;
  return places;
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
