// Data movement for the shape ops on device buffers (the CUDA twins of kernels/cpu/shape.h):
// permuting axes and moving blocks along one axis (slice, concat and their gradients).
// Forward copies run on the unsigned integer as wide as the dtype (cpu::bits_of), so one
// instantiation per width serves every dtype; the gradient paths (overwrite = false) run on
// float/double. Launches are queued on the engine stream.
#pragma once
#include <cstdint>

namespace mcdl::cuda {

// The most axes permute takes (after dropping size-1 axes and merging axes that stay adjacent):
// the geometry travels by value as a kernel argument.
inline constexpr int64_t max_permute_rank = 16;

// dst = src permuted: dst axis d is src axis perm[d]. src_shape and perm are host arrays of
// `rank` entries. Writes every element of dst (dst = value when overwrite, else dst += value).
template <class T>
void permute(const T* src, T* dst, const int64_t* src_shape, const int64_t* perm, int64_t rank, bool overwrite);

// Moves `count` positions along an axis: src viewed as [outer, src_axis, inner] and dst as
// [outer, dst_axis, inner]; src positions [src_start, src_start + count) go to dst positions
// [dst_start, dst_start + count). Other dst positions are left untouched.
template <class T>
void copy_axis_block(const T* src, int64_t src_axis, int64_t src_start, T* dst, int64_t dst_axis, int64_t dst_start,
                     int64_t outer, int64_t count, int64_t inner, bool overwrite);

// Gradient of a slice: dst [outer, axis, inner] receives grad [outer, count, inner] at
// positions [start, start + count). In overwrite mode the other positions become zero; in
// accumulate mode they are left as they are.
template <class T>
void slice_backward(const T* grad, T* dst, int64_t outer, int64_t axis, int64_t start, int64_t count, int64_t inner,
                    bool overwrite);

}  // namespace mcdl::cuda
