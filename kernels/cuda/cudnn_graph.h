// An operation graph of cuDNN's backend API under construction (.cu files and tests): tensors,
// matrix products, point-wise operations and reductions, each finalized as it is added, the
// descriptors kept alive as long as the graph.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "kernels/cuda/cudnn_backend.h"

namespace mcdl::cuda {

class CudnnGraph {
 public:
  // A finalized tensor descriptor.
  const BackendDescriptor& tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& strides, int64_t alignment, bool is_virtual = false,
                                  bool by_value = false);
  // A virtual intermediate, packed row-major, with the next id from 100 up.
  const BackendDescriptor& intermediate(cudnnDataType_t type, const std::vector<int64_t>& dims, int64_t alignment);

  // c = a·b, accumulated in `compute`.
  void matmul(const BackendDescriptor& a, const BackendDescriptor& b, const BackendDescriptor& c,
              cudnnDataType_t compute = CUDNN_DATA_FLOAT);
  // y = mode(alpha1·x, alpha2·b) in fp32, b null for the unary modes.
  void pointwise(cudnnPointwiseMode_t mode, const BackendDescriptor& x, const BackendDescriptor* b,
                 const BackendDescriptor& y, float alpha1 = 1, float alpha2 = 1);
  // y = x reduced over the dimensions where y has 1, in fp32.
  void reduction(cudnnReduceTensorOp_t reduce, const BackendDescriptor& x, const BackendDescriptor& y);

  // The operation graph of the operations added so far, not yet finalized; with `handle` where
  // not null (cuDNN 9.8 and later take none).
  BackendDescriptor& graph(cudnnHandle_t handle = nullptr);
  // The same, finalized (throws with cuDNN's reason when it refuses the graph).
  const BackendDescriptor& finalized_graph(cudnnHandle_t handle = nullptr);

  // Keeps a descriptor alive with the graph (a deque: in place, so references stay valid).
  BackendDescriptor& keep(BackendDescriptor&& descriptor) { return parts_.emplace_back(std::move(descriptor)); }

 private:
  std::deque<BackendDescriptor> parts_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_virtual_ = 100;
};

}  // namespace mcdl::cuda
