// Shape ops: reshape, permute/transpose, slice and concat. They move data without arithmetic,
// so they take every dtype; gradients flow for f32 and f64.
#pragma once
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

// The same elements in a new shape, as a view sharing x's storage. At most one dimension
// may be -1; it is inferred from the element count.
Tensor reshape(const Tensor& x, const Shape& shape);

// A contiguous copy whose axis d is x's axis dims[d] (dims a permutation of the axes;
// negative values count from the end).
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
// permute with axes d0 and d1 swapped.
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);

// Positions [start, end) along `axis`, with 0 ≤ start ≤ end ≤ size(axis). Along axis 0 the
// result is a view sharing x's storage; along other axes it is a copy.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end);

// The tensors joined along `axis`; every other dimension must match.
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis);

}  // namespace mcdl
