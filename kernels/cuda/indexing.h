// Row gathers and scatters on device buffers (the CUDA twins of kernels/cpu/indexing.h):
// index_select, masked_select and their gradients. A "row" is the block of `row` contiguous
// elements behind one leading index. Gathers run on the unsigned integer as wide as the dtype
// (cpu::bits_of), scatters on float/double. Launches are queued on the engine stream; every
// pointer is a device pointer.
#pragma once
#include <cstdint>

namespace mcdl::cuda {

// *first_invalid = the position of the first index outside [0, rows), or `count` when all are
// valid (a device scalar the caller reads back).
template <class I>
void first_invalid_index(const I* indices, int64_t count, int64_t rows, int64_t* first_invalid);

// out[i, :] = x[indices[i], :] for i in [0, count). Indices must be valid.
template <class T, class I>
void gather_rows(const T* x, const I* indices, T* out, int64_t count, int64_t row);

// dst[r, :] (=|+=) Σ grad[positions[p], :] over p in [row_starts[r], row_starts[r + 1]), summed
// in double in that order (positions grouped by target row, ascending within a row, as the CPU
// kernel's stable counting sort makes them), so repeated indices add deterministically.
// dst has `rows` rows; in overwrite mode rows that no position names become zero.
template <class T>
void scatter_add_rows(const T* grad, const int64_t* row_starts, const int64_t* positions, T* dst, int64_t rows,
                      int64_t row, bool overwrite);

// The most blocks of the mask scan, and the size of the int64 scratch it works in.
inline constexpr int64_t mask_scan_max_blocks = 1024;
inline constexpr int64_t mask_summary_size = 2 + 2 * mask_scan_max_blocks;

// For each of n mask values its place among the selected (non-zero) ones, or -1: places[n].
// summary (mask_summary_size int64s) receives summary[0] = the number selected and
// summary[1] = the position of the first value other than 0 or 1, or n when all are valid.
// A deterministic prefix sum: per-block counts, one block scanning them, per-block scans.
void mask_places(const uint8_t* mask, int64_t n, int64_t* places, int64_t* summary);

// out[places[i], :] = x[i, :] for the selected rows i of n (places from mask_places).
template <class T>
void masked_gather_rows(const T* x, const int64_t* places, int64_t n, T* out, int64_t row);

// dst[i, :] (=|+=) grad[places[i], :] for the selected rows; in overwrite mode the other rows
// become zero, in accumulate mode they are left as they are.
template <class T>
void masked_scatter_rows(const T* grad, const int64_t* places, int64_t n, T* dst, int64_t row, bool overwrite);

}  // namespace mcdl::cuda
