// The emulated cuDNN's operation graphs as finalize leaves them, shared by its descriptors
// (kernels/emu/cudnn_emu.cpp) and its execution (kernels/emu/cudnn_emu_execute.cpp). Internal to
// libmcdl_cudnn_emu.so.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/emu/cudnn_api.h"

namespace mcdl::emu::cudnn_emu {

struct TensorInfo {
  cudnnDataType_t type;
  std::vector<int64_t> dims, strides;
  int64_t uid, alignment;
  bool is_virtual, by_value;
  bool operator==(const TensorInfo&) const = default;
};

enum class OpKind { matmul, pointwise, reduction };

struct OpInfo {
  OpKind kind;
  std::vector<TensorInfo> inputs;  // matmul: A, B; pointwise: X (, B); reduction: X
  TensorInfo output;
  // As the caller set them (any integer: checked by the heuristics, never cast to the enums).
  int64_t compute = CUDNN_DATA_FLOAT;  // cudnnDataType_t
  int64_t mode = 0;                    // cudnnPointwiseMode_t or cudnnReduceTensorOp_t
  double alpha1 = 1, alpha2 = 1;
};

struct GraphInfo {
  std::vector<OpInfo> ops;                // in an order where every tensor is written before it is read
  std::map<int64_t, TensorInfo> tensors;  // every tensor, by uid
};

// Records `why` for cudnnGetLastErrorString and returns `status`.
cudnnStatus_t fail(cudnnStatus_t status, const std::string& why);

// "[2,3,4]".
std::string dims_text(const std::vector<int64_t>& dims);

// The bytes of one element of a cudnnDataType_t (0 for one the emulator does not know).
size_t element_bytes(int64_t type);

// Runs `graph` on the caller's pointers by tensor id (device memory, which is host memory here;
// a by-value tensor's pointer is a host scalar): every non-virtual tensor needs one, aligned to
// its tensor's byte alignment, and no other id may appear. Virtual tensors live in scratch.
// With `run` false, only checks the pointers.
cudnnStatus_t execute_graph(const GraphInfo& graph, const std::map<int64_t, void*>& given, bool run = true);

// The bytes of a tensor's elements (its dims' product times its element size).
size_t tensor_bytes(const TensorInfo& t);

}  // namespace mcdl::emu::cudnn_emu
