// Data movement for the shape ops: permuting axes and moving blocks along one axis (slice,
// concat and their gradients) on raw host buffers.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "kernels/permute_runs.h"

namespace mcdl::cpu {

// The unsigned integer as wide as T. Forward data movement copies every dtype (bf16 and the
// integer types included) bit for bit through it, so one kernel serves all dtypes while the
// gradient path (overwrite = false) runs on float/double.
template <class T>
using bits_of = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// dst = src permuted: dst axis d is src axis perm[d]. src has shape src_shape[0..rank), any
// rank (the CUDA kernel takes at most its max_permute_rank). Writes every element of dst (dst =
// value when overwrite, else dst += value).
inline constexpr int64_t max_permute_rank = std::numeric_limits<int64_t>::max();

template <class T>
void permute(const T* src, T* dst, const int64_t* src_shape, const int64_t* perm, int64_t rank, bool overwrite) {
  const PermuteRuns runs = permute_runs(src_shape, perm, rank);
  const std::vector<int64_t>& dst_shape = runs.dst_shape;
  const std::vector<int64_t>& src_stride = runs.src_stride;
  const int64_t axes = static_cast<int64_t>(dst_shape.size());
  // One dst row (the last dst axis) at a time; its elements are src_stride.back() apart (1: a
  // contiguous run, copied as such). Rows go in blocks: the first row's source offset comes
  // from its index, the next ones from an odometer over the dst axes (a division per axis per
  // row cost more than the copy).
  const int64_t cols = dst_shape.back(), col_stride = src_stride.back();
  int64_t rows = 1;
  for (int64_t d = 0; d < axes - 1; ++d) rows *= dst_shape[d];
  if (rows == 0 || cols == 0) return;
  const int64_t block = std::max<int64_t>(1, 4096 / cols);
  parallel_rows((rows + block - 1) / block, block * cols, [&](int64_t b) {
    std::vector<int64_t> index(static_cast<size_t>(axes), 0);
    int64_t src_base = 0;
    for (int64_t d = axes - 2, rest = b * block; d >= 0; --d) {
      index[d] = rest % dst_shape[d];
      src_base += index[d] * src_stride[d];
      rest /= dst_shape[d];
    }
    const int64_t end = std::min(rows, (b + 1) * block);
    for (int64_t r = b * block; r < end; ++r) {
      T* out = dst + r * cols;
      const T* in = src + src_base;
      if (col_stride == 1) {
        if (overwrite) {
          for (int64_t c = 0; c < cols; ++c) out[c] = in[c];
        } else {
          for (int64_t c = 0; c < cols; ++c) out[c] += in[c];
        }
      } else if (overwrite) {
        for (int64_t c = 0; c < cols; ++c) out[c] = in[c * col_stride];
      } else {
        for (int64_t c = 0; c < cols; ++c) out[c] += in[c * col_stride];
      }
      for (int64_t d = axes - 2; d >= 0; --d) {  // next row: carry through the dst axes
        src_base += src_stride[d];
        if (++index[d] < dst_shape[d]) break;
        src_base -= index[d] * src_stride[d];
        index[d] = 0;
      }
    }
  });
}

// Moves `count` positions along an axis: src viewed as [outer, src_axis, inner] and dst as
// [outer, dst_axis, inner]; src positions [src_start, src_start + count) go to dst positions
// [dst_start, dst_start + count). Other dst positions are left untouched.
template <class T>
void copy_axis_block(const T* src, int64_t src_axis, int64_t src_start, T* dst, int64_t dst_axis, int64_t dst_start,
                     int64_t outer, int64_t count, int64_t inner, bool overwrite) {
  const int64_t block = count * inner;
  parallel_rows(outer, block, [&](int64_t o) {
    const T* from = src + (o * src_axis + src_start) * inner;
    T* to = dst + (o * dst_axis + dst_start) * inner;
    if (overwrite) {
      for (int64_t i = 0; i < block; ++i) to[i] = from[i];
    } else {
      for (int64_t i = 0; i < block; ++i) to[i] += from[i];
    }
  });
}

// Gradient of a slice: dst [outer, axis, inner] receives grad [outer, count, inner] at
// positions [start, start + count). In overwrite mode the other positions become zero; in
// accumulate mode they are left as they are.
template <class T>
void slice_backward(const T* grad, T* dst, int64_t outer, int64_t axis, int64_t start, int64_t count, int64_t inner,
                    bool overwrite) {
  if (overwrite) {
    parallel_rows(outer, axis * inner, [&](int64_t o) {
      T* row = dst + o * axis * inner;
      for (int64_t i = 0; i < start * inner; ++i) row[i] = T(0);
      for (int64_t i = (start + count) * inner; i < axis * inner; ++i) row[i] = T(0);
    });
  }
  copy_axis_block(grad, count, 0, dst, axis, start, outer, count, inner, overwrite);
}

}  // namespace mcdl::cpu
