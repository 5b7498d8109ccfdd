// Indexing ops: rows picked by index (index_select) and elements or rows picked by a 0/1
// mask (masked_select, masked_select_rows). They take every dtype; gradients flow for f32
// and f64 and scatter back into the selected places. Also the range check of indices, and
// one_hot.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

// Rows of x [N, ...] along axis 0: indices (i64 or i32, 1-D [M], each in [0, N)) → [M, ...].
// Repeated indices are allowed; their gradients add up.
Tensor index_select(const Tensor& x, const Tensor& indices);

// Indices made on the host (rows to select, a batch's bank slots, class targets), kept there and
// uploaded once. Their users check the range on the host: index_select, one_hot and cross_entropy
// on a HostIndex, and index_select's gradient grouping, read nothing back from the device, where
// an index tensor needs a read-back for its range check (and index_select a second one for the
// grouping).
class HostIndex {
 public:
  HostIndex(std::vector<int64_t> values, Device device);
  const std::vector<int64_t>& host() const { return *host_; }
  // The same values, shared: what a gradient keeps without copying them.
  std::shared_ptr<const std::vector<int64_t>> host_data() const { return host_; }
  const Tensor& tensor() const { return tensor_; }  // i64 [M] on the device
  int64_t size() const { return static_cast<int64_t>(host_->size()); }
  // The position of the first value outside [0, bound), or -1.
  int64_t first_outside(int64_t bound) const;

 private:
  std::shared_ptr<const std::vector<int64_t>> host_;  // shared with the gradients that read it
  Tensor tensor_;
};
Tensor index_select(const Tensor& x, const HostIndex& index);

// The elements of x where mask (u8, x's shape, values 0 or 1) is 1, in row-major order, as
// a 1-D tensor.
Tensor masked_select(const Tensor& x, const Tensor& mask);

// The rows of x [N, ...] where mask (u8 [N], values 0 or 1) is 1 → [count, ...].
Tensor masked_select_rows(const Tensor& x, const Tensor& mask);

// The position of the first of `indices` (i64 or i32, any device) outside [0, rows), or -1 when
// all are valid. On a CUDA device only that position comes back to the host, not the indices.
int64_t first_invalid_index(const Tensor& indices, int64_t rows);

// out[i, c] = 1 where classes[i] == c, else 0: classes i64 [n] in [0, num_classes), any device;
// the result [n, num_classes] of `dtype` (f32 or f64) on that device. Not differentiable.
Tensor one_hot(const Tensor& classes, int64_t num_classes, DType dtype = DType::f32);
Tensor one_hot(const HostIndex& classes, int64_t num_classes, DType dtype = DType::f32);

}  // namespace mcdl
