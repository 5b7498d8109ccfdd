// Data movement for the shape ops: permuting axes and moving blocks along one axis (slice,
// concat and their gradients) on raw host buffers.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/parallel.h"

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

// The same permutation with size-1 axes dropped and neighbouring dst axes merged where they are
// also neighbours, in the same order, in src (e.g. [B, H, T, hd] → [B, T, H, hd] keeps its four
// axes, [B, 1, T, D] → [B, T, 1, D] becomes a plain copy): fewer, longer rows.
struct PermutePlan {
  std::vector<int64_t> src_shape, perm;  // perm[d] = the src axis of dst axis d
};
inline PermutePlan coalesced_permute(const int64_t* src_shape, const int64_t* perm, int64_t rank) {
  // Runs of dst axes whose src axes are consecutive and in order become one axis.
  std::vector<std::vector<int64_t>> runs;  // src axes of each merged dst axis, in order
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t axis = perm[d];
    if (src_shape[axis] == 1) continue;
    if (!runs.empty()) {
      const int64_t last = runs.back().back();
      bool ones_between = last < axis;
      for (int64_t a = last + 1; ones_between && a < axis; ++a) ones_between = src_shape[a] == 1;
      if (ones_between) {
        runs.back().push_back(axis);
        continue;
      }
    }
    runs.push_back({axis});
  }
  // The merged axes in src order give the coalesced src shape; perm maps dst runs to it.
  std::vector<int64_t> order(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return runs[x][0] < runs[y][0]; });
  PermutePlan plan{std::vector<int64_t>(runs.size()), std::vector<int64_t>(runs.size())};
  for (size_t s = 0; s < order.size(); ++s) {
    int64_t size = 1;
    for (int64_t axis : runs[static_cast<size_t>(order[s])]) size *= src_shape[axis];
    plan.src_shape[s] = size;
    plan.perm[static_cast<size_t>(order[s])] = static_cast<int64_t>(s);
  }
  return plan;
}

template <class T>
void permute(const T* src, T* dst, const int64_t* src_shape_in, const int64_t* perm_in, int64_t rank_in,
             bool overwrite) {
  const PermutePlan plan = coalesced_permute(src_shape_in, perm_in, rank_in);
  const int64_t rank = static_cast<int64_t>(plan.perm.size());
  if (rank == 0) {  // a single element
    dst[0] = overwrite ? src[0] : dst[0] + src[0];
    return;
  }
  const int64_t* src_shape = plan.src_shape.data();
  const int64_t* perm = plan.perm.data();
  std::vector<int64_t> src_strides(static_cast<size_t>(rank), 1), dst_shape(static_cast<size_t>(rank));
  for (int64_t d = rank - 2; d >= 0; --d) src_strides[d] = src_strides[d + 1] * src_shape[d + 1];
  for (int64_t d = 0; d < rank; ++d) dst_shape[d] = src_shape[perm[d]];
  // One dst row (the last dst axis) at a time; its elements are src_strides[perm.back()] apart
  // (1 when the last axes agree: a contiguous run, copied as such).
  // Rows go in blocks: the first row's source offset comes from its index, the next ones from
  // an odometer over the dst axes (a division per axis per row cost more than the copy).
  const int64_t cols = dst_shape[rank - 1], col_stride = src_strides[perm[rank - 1]];
  int64_t rows = 1;
  for (int64_t d = 0; d < rank - 1; ++d) rows *= dst_shape[d];
  const int64_t block = std::max<int64_t>(1, 4096 / cols);
  parallel_rows((rows + block - 1) / block, block * cols, [&](int64_t b) {
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    int64_t src_base = 0;
    for (int64_t d = rank - 2, rest = b * block; d >= 0; --d) {
      index[d] = rest % dst_shape[d];
      src_base += index[d] * src_strides[perm[d]];
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
      for (int64_t d = rank - 2; d >= 0; --d) {  // next row: carry through the dst axes
        src_base += src_strides[perm[d]];
        if (++index[d] < dst_shape[d]) break;
        src_base -= index[d] * src_strides[perm[d]];
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
