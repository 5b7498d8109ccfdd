#include "kernels/cuda/cudnn_graph.h"

namespace mcdl::cuda {

const BackendDescriptor& CudnnGraph::tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                                            const std::vector<int64_t>& strides, int64_t alignment, bool is_virtual,
                                            bool by_value) {
  BackendDescriptor& t = keep(BackendDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  t.set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
      .set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
      .set_int64s(CUDNN_ATTR_TENSOR_STRIDES, strides)
      .set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
      .set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment)
      .set_bool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, is_virtual)
      .set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, by_value);
  t.finalize();
  return t;
}

const BackendDescriptor& CudnnGraph::intermediate(cudnnDataType_t type, const std::vector<int64_t>& dims,
                                                  int64_t alignment) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return tensor(next_virtual_++, type, dims, strides, alignment, true);
}

void CudnnGraph::matmul(const BackendDescriptor& a, const BackendDescriptor& b, const BackendDescriptor& c,
                        cudnnDataType_t compute) {
  BackendDescriptor& desc = keep(BackendDescriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR));
  desc.set_data_type(CUDNN_ATTR_MATMUL_COMP_TYPE, compute).finalize();
  BackendDescriptor& op = keep(BackendDescriptor(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR));
  op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
      .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
      .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
      .set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, desc)
      .finalize();
  ops_.push_back(op.get());
}

void CudnnGraph::pointwise(cudnnPointwiseMode_t mode, const BackendDescriptor& x, const BackendDescriptor* b,
                           const BackendDescriptor& y, float alpha1, float alpha2) {
  BackendDescriptor& desc = keep(BackendDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
  desc.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
      .set_data_type(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT)
      .finalize();
  BackendDescriptor& op = keep(BackendDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
  op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc)
      .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha1)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &alpha2);
  if (b) op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op.finalize();
  ops_.push_back(op.get());
}

void CudnnGraph::reduction(cudnnReduceTensorOp_t reduce, const BackendDescriptor& x, const BackendDescriptor& y) {
  BackendDescriptor& desc = keep(BackendDescriptor(CUDNN_BACKEND_REDUCTION_DESCRIPTOR));
  desc.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce)
      .set_data_type(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)
      .finalize();
  BackendDescriptor& op = keep(BackendDescriptor(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR));
  op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc)
      .set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
      .set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
      .finalize();
  ops_.push_back(op.get());
}

BackendDescriptor& CudnnGraph::graph(cudnnHandle_t handle) {
  BackendDescriptor& g = keep(BackendDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  g.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops_.size()), ops_.data());
  if (handle) g.set_handle(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle);
  return g;
}

const BackendDescriptor& CudnnGraph::finalized_graph(cudnnHandle_t handle) {
  BackendDescriptor& g = graph(handle);
  g.finalize();
  return g;
}

}  // namespace mcdl::cuda
