// Reductions over all elements or one axis of an f32 / f64 tensor. Sums accumulate in
// double and do not depend on the thread count. Axes may be negative (counted from the
// end); a 0-dim tensor accepts axis 0 or -1, as in PyTorch. Reducing an empty set (no
// elements, or size 0 along the axis) throws "<op>: empty reduction ...".
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// Over all elements: a 0-dim result (shape {}).
Tensor sum(const Tensor& a);
Tensor mean(const Tensor& a);
// The largest element; its gradient goes to the first maximal element in row-major order
// (PyTorch's max() would split it evenly among ties).
Tensor max(const Tensor& a);

// Over one axis: the axis is removed, or kept with size 1 when keepdim is set.
Tensor sum(const Tensor& a, int64_t axis, bool keepdim = false);
Tensor mean(const Tensor& a, int64_t axis, bool keepdim = false);
// Max values along the axis; the gradient goes to the position argmax returns.
Tensor max(const Tensor& a, int64_t axis, bool keepdim = false);
// i64 index of the maximum along the axis: the first one on ties, NaN counting as the largest
// (PyTorch's argmax). Not differentiable.
Tensor argmax(const Tensor& a, int64_t axis, bool keepdim = false);

// k-means' assignment step: from the products x·cᵀ of n points and m centres (f32 [n, m]) and
// their squared norms (f64 [n] and [m]), all on one device, the i64 [n] index of each point's
// nearest centre: the first c minimising max(0, ‖x‖² − 2·x·c + ‖c‖²), computed in double in
// that order, the same bits on either device. Not differentiable.
Tensor nearest_from_products(const Tensor& products, const Tensor& point_norms, const Tensor& centre_norms);
// k-means' exact distances: for each row i of f32 points [n, D], Σ_d (x_d − c_d)² over d in order,
// in double, with c the row labels[i] of f64 centres [k, D] (i64 labels [n], each in [0, k)): f64
// [n], the same bits on either device. Not differentiable.
Tensor assigned_squared_distances(const Tensor& points, const Tensor& labels, const Tensor& centres);
// k-means' centre sums: for each cluster c, the sum in double of the rows of f32 points [n, D]
// listed for it, in the order listed: members[offsets[c] .. offsets[c + 1]) (i64 members [m] of
// rows in [0, n); i64 offsets [k + 1], non-decreasing from 0 to m). Columns [first, last) only:
// f64 [k, last − first], the same bits on either device. Not differentiable.
Tensor cluster_sums(const Tensor& points, const Tensor& members, const Tensor& offsets, int64_t first, int64_t last);

}  // namespace mcdl
