// Indexing ops: rows picked by index (index_select) and elements or rows picked by a 0/1
// mask (masked_select, masked_select_rows). They take every dtype; gradients flow for f32
// and f64 and scatter back into the selected places.
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// Rows of x [N, ...] along axis 0: indices (i64 or i32, 1-D [M], each in [0, N)) → [M, ...].
// Repeated indices are allowed; their gradients add up.
Tensor index_select(const Tensor& x, const Tensor& indices);

// The elements of x where mask (u8, x's shape, values 0 or 1) is 1, in row-major order, as
// a 1-D tensor.
Tensor masked_select(const Tensor& x, const Tensor& mask);

// The rows of x [N, ...] where mask (u8 [N], values 0 or 1) is 1 → [count, ...].
Tensor masked_select_rows(const Tensor& x, const Tensor& mask);

}  // namespace mcdl
