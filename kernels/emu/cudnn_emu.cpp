// The emulated cuDNN: the backend (graph) API of kernels/emu/cudnn_api.h with cuDNN's documented
// semantics, running operation graphs on the host. Built as libmcdl_cudnn_emu.so and loaded by the
// emulator build's kernels/cuda/cudnn.cu exactly as the GPU build loads libcudnn.so.9, so the
// engine's graphs, plans and variant packs are built and run without a GPU.
//
// Emulated, as cuDNN documents them: descriptors created by type, attributes checked against
// their descriptor's type and element type, nothing set after finalize, a descriptor attribute
// accepted only once finalized; tensors (data type, dimensions, strides, unique id, virtual,
// by value); matrix products with broadcast batch dimensions, point-wise operations with
// broadcast inputs, reductions to the dimensions left at 1; an operation graph's dataflow by
// tensor id, in any order of its operations; heuristics that offer one engine; execution plans
// and variant packs, with by-value scalars read from host memory. Virtual tensors hold their
// values in their declared type (bf16 rounds to nearest even), products and reductions accumulate
// in their compute type, in index order.
//
// Not emulated: speed, fusion, and the real library's support surface. The real cuDNN offers an
// engine only for graphs one of its engines implements (the fused attention's pattern, say);
// this one runs any graph of the operations above, so only a GPU says whether cuDNN takes a graph.
// Emulated "device" memory is host memory and emulated device work is done when its call returns,
// so cudnnBackendExecute computes at once; the stream is recorded only.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/emu/cudnn_api.h"

struct cudnnContext {
  cudaStream_t stream = nullptr;
};

namespace {

thread_local std::string last_error;

cudnnStatus_t fail(cudnnStatus_t status, const std::string& why) {
  last_error = why;
  return status;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

struct Descriptor;
using DescriptorPtr = std::shared_ptr<Descriptor>;

// One attribute as set: its element type and its elements, by kind.
struct Attribute {
  cudnnBackendAttributeType_t type;
  std::vector<int64_t> integers;       // INT64, and the enums (data type, modes, operator, bool)
  std::vector<double> reals;           // FLOAT, DOUBLE
  std::vector<void*> pointers;         // VOID_PTR, HANDLE
  std::vector<DescriptorPtr> children;  // BACKEND_DESCRIPTOR
};

struct TensorInfo {
  cudnnDataType_t type;
  std::vector<int64_t> dims, strides;
  int64_t uid;
  bool is_virtual, by_value;
  bool operator==(const TensorInfo&) const = default;
};

enum class OpKind { matmul, pointwise, reduction };

struct OpInfo {
  OpKind kind;
  std::vector<TensorInfo> inputs;  // matmul: A, B; pointwise: X (, B); reduction: X
  TensorInfo output;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int64_t mode = 0;  // cudnnPointwiseMode_t or cudnnReduceTensorOp_t
  double alpha1 = 1, alpha2 = 1;
};

struct GraphInfo {
  std::vector<OpInfo> ops;              // in an order where every virtual tensor is written before read
  std::map<int64_t, TensorInfo> tensors;  // every tensor, by uid
};

struct Descriptor {
  cudnnBackendDescriptorType_t type;
  bool finalized = false;
  std::map<int, Attribute> attributes;
  // What finalize derived, by type.
  TensorInfo tensor{};
  OpInfo op{};
  std::shared_ptr<const GraphInfo> graph;  // graph, heuristics, engine, configuration, plan
};

// Every live descriptor, so that a stale or foreign handle is refused rather than followed.
std::mutex registry_mutex;
std::map<void*, DescriptorPtr> registry;

DescriptorPtr find(cudnnBackendDescriptor_t handle) {
  const std::lock_guard lock(registry_mutex);
  const auto found = registry.find(handle);
  return found == registry.end() ? nullptr : found->second;
}

const char* type_name(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: return "POINTWISE";
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return "ENGINE";
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return "ENGINECFG";
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return "ENGINEHEUR";
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return "EXECUTION_PLAN";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return "OPERATION_POINTWISE";
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return "OPERATIONGRAPH";
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return "VARIANT_PACK";
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return "TENSOR";
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR: return "MATMUL";
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return "OPERATION_MATMUL";
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR: return "REDUCTION";
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return "OPERATION_REDUCTION";
  }
  return "unknown";
}

bool is_operation(cudnnBackendDescriptorType_t type) {
  return type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR || type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR;
}

// The element type each descriptor type's settable attributes take (FLOAT alphas also DOUBLE).
bool attribute_allowed(cudnnBackendDescriptorType_t descriptor, int name, cudnnBackendAttributeType_t type) {
  static const std::map<std::pair<int, int>, cudnnBackendAttributeType_t> table = {
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_DATA_TYPE}, CUDNN_TYPE_DATA_TYPE},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_DIMENSIONS}, CUDNN_TYPE_INT64},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_STRIDES}, CUDNN_TYPE_INT64},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_UNIQUE_ID}, CUDNN_TYPE_INT64},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT}, CUDNN_TYPE_INT64},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_IS_VIRTUAL}, CUDNN_TYPE_BOOLEAN},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_IS_BY_VALUE}, CUDNN_TYPE_BOOLEAN},
      {{CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MODE}, CUDNN_TYPE_POINTWISE_MODE},
      {{CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MATH_PREC}, CUDNN_TYPE_DATA_TYPE},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR},
       CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC},
       CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_BDESC},
       CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_YDESC},
       CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1}, CUDNN_TYPE_FLOAT},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2}, CUDNN_TYPE_FLOAT},
      {{CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_ATTR_REDUCTION_OPERATOR}, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE},
      {{CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_ATTR_REDUCTION_COMP_TYPE}, CUDNN_TYPE_DATA_TYPE},
      {{CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, CUDNN_ATTR_OPERATION_REDUCTION_DESC}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, CUDNN_ATTR_OPERATION_REDUCTION_XDESC},
       CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, CUDNN_ATTR_OPERATION_REDUCTION_YDESC},
       CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_MATMUL_DESCRIPTOR, CUDNN_ATTR_MATMUL_COMP_TYPE}, CUDNN_TYPE_DATA_TYPE},
      {{CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_ADESC}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_BDESC}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_CDESC}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_DESC}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_ATTR_OPERATIONGRAPH_HANDLE}, CUDNN_TYPE_HANDLE},
      {{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_ATTR_OPERATIONGRAPH_OPS}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_ATTR_ENGINEHEUR_MODE}, CUDNN_TYPE_HEUR_MODE},
      {{CUDNN_BACKEND_ENGINE_DESCRIPTOR, CUDNN_ATTR_ENGINE_OPERATION_GRAPH}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_ENGINE_DESCRIPTOR, CUDNN_ATTR_ENGINE_GLOBAL_INDEX}, CUDNN_TYPE_INT64},
      {{CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, CUDNN_ATTR_ENGINECFG_ENGINE}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_ATTR_EXECUTION_PLAN_HANDLE}, CUDNN_TYPE_HANDLE},
      {{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG}, CUDNN_TYPE_BACKEND_DESCRIPTOR},
      {{CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS}, CUDNN_TYPE_INT64},
      {{CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS}, CUDNN_TYPE_VOID_PTR},
      {{CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_WORKSPACE}, CUDNN_TYPE_VOID_PTR},
  };
  const auto found = table.find({descriptor, name});
  if (found == table.end()) return false;
  return found->second == type || (found->second == CUDNN_TYPE_FLOAT && type == CUDNN_TYPE_DOUBLE);
}

// Reads `count` elements of `type` from the caller's array into an Attribute.
cudnnStatus_t read_elements(cudnnBackendAttributeType_t type, int64_t count, const void* elements, Attribute& out) {
  out.type = type;
  for (int64_t i = 0; i < count; ++i) {
    switch (type) {
      case CUDNN_TYPE_INT64: out.integers.push_back(static_cast<const int64_t*>(elements)[i]); break;
      case CUDNN_TYPE_BOOLEAN: out.integers.push_back(static_cast<const bool*>(elements)[i] ? 1 : 0); break;
      case CUDNN_TYPE_DATA_TYPE:
      case CUDNN_TYPE_POINTWISE_MODE:
      case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE:
      case CUDNN_TYPE_HEUR_MODE:  // C enums: int-sized
        out.integers.push_back(static_cast<const int*>(elements)[i]);
        break;
      case CUDNN_TYPE_FLOAT: out.reals.push_back(static_cast<const float*>(elements)[i]); break;
      case CUDNN_TYPE_DOUBLE: out.reals.push_back(static_cast<const double*>(elements)[i]); break;
      case CUDNN_TYPE_VOID_PTR:
      case CUDNN_TYPE_HANDLE: out.pointers.push_back(static_cast<void* const*>(elements)[i]); break;
      case CUDNN_TYPE_BACKEND_DESCRIPTOR: {
        const DescriptorPtr child = find(static_cast<void* const*>(elements)[i]);
        if (!child) return fail(CUDNN_STATUS_BAD_PARAM, "a descriptor attribute names no live descriptor");
        if (!child->finalized)
          return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                      std::string("a descriptor attribute names an unfinalized ") + type_name(child->type));
        out.children.push_back(child);
        break;
      }
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

const Attribute* attribute(const Descriptor& d, int name) {
  const auto found = d.attributes.find(name);
  return found == d.attributes.end() ? nullptr : &found->second;
}
int64_t integer_or(const Descriptor& d, int name, int64_t fallback) {
  const Attribute* a = attribute(d, name);
  return a && !a->integers.empty() ? a->integers[0] : fallback;
}
DescriptorPtr child(const Descriptor& d, int name) {
  const Attribute* a = attribute(d, name);
  return a && a->children.size() == 1 ? a->children[0] : nullptr;
}

// ---- finalize, by descriptor type ----

bool supported_type(int64_t type) {
  return type == CUDNN_DATA_FLOAT || type == CUDNN_DATA_DOUBLE || type == CUDNN_DATA_BFLOAT16 ||
         type == CUDNN_DATA_HALF || type == CUDNN_DATA_INT32 || type == CUDNN_DATA_INT64;
}

cudnnStatus_t finalize_tensor(Descriptor& d) {
  const Attribute* dims = attribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
  const Attribute* strides = attribute(d, CUDNN_ATTR_TENSOR_STRIDES);
  if (!dims || !strides || !attribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID) || !attribute(d, CUDNN_ATTR_TENSOR_DATA_TYPE))
    return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: the data type, dimensions, strides and unique id must all be set");
  if (dims->integers.size() != strides->integers.size() || dims->integers.empty() || dims->integers.size() > 8)
    return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: 1 to 8 dimensions, as many strides as dimensions");
  for (size_t i = 0; i < dims->integers.size(); ++i)
    if (dims->integers[i] < 1 || strides->integers[i] < 1)
      return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: dimensions and strides must be positive, got dims " +
                                              dims_text(dims->integers) + " strides " + dims_text(strides->integers));
  const int64_t type = integer_or(d, CUDNN_ATTR_TENSOR_DATA_TYPE, -1);
  if (!supported_type(type))
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "TENSOR: data type " + std::to_string(type) + " not emulated");
  d.tensor = TensorInfo{static_cast<cudnnDataType_t>(type),
                        dims->integers,
                        strides->integers,
                        integer_or(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0),
                        integer_or(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, 0) != 0,
                        integer_or(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, 0) != 0};
  if (d.tensor.by_value && d.tensor.is_virtual)
    return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: a by-value tensor cannot be virtual");
  if (d.tensor.by_value)
    for (int64_t dim : d.tensor.dims)
      if (dim != 1) return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: a by-value tensor is a scalar (every dimension 1)");
  return CUDNN_STATUS_SUCCESS;
}

// Each dimension of `input` equals the output's or is 1.
bool broadcasts_to(const std::vector<int64_t>& input, const std::vector<int64_t>& output) {
  if (input.size() != output.size()) return false;
  for (size_t i = 0; i < input.size(); ++i)
    if (input[i] != output[i] && input[i] != 1) return false;
  return true;
}

bool is_binary(int64_t mode) {
  return mode == CUDNN_POINTWISE_ADD || mode == CUDNN_POINTWISE_MUL || mode == CUDNN_POINTWISE_MIN ||
         mode == CUDNN_POINTWISE_MAX || mode == CUDNN_POINTWISE_DIV || mode == CUDNN_POINTWISE_SUB;
}
bool is_unary(int64_t mode) {
  return mode == CUDNN_POINTWISE_SQRT || mode == CUDNN_POINTWISE_EXP || mode == CUDNN_POINTWISE_LOG ||
         mode == CUDNN_POINTWISE_IDENTITY;
}

cudnnStatus_t finalize_pointwise_op(Descriptor& d) {
  const DescriptorPtr pw = child(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
  const DescriptorPtr x = child(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
  const DescriptorPtr b = child(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
  const DescriptorPtr y = child(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
  if (!pw || !x || !y) return fail(CUDNN_STATUS_BAD_PARAM, "OPERATION_POINTWISE: needs its PW descriptor, X and Y");
  const int64_t mode = integer_or(*pw, CUDNN_ATTR_POINTWISE_MODE, -1);
  if (!is_binary(mode) && !is_unary(mode))
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "OPERATION_POINTWISE: mode " + std::to_string(mode) + " not emulated");
  if (is_binary(mode) != (b != nullptr))
    return fail(CUDNN_STATUS_BAD_PARAM, is_binary(mode) ? "OPERATION_POINTWISE: a binary mode needs B"
                                                        : "OPERATION_POINTWISE: a unary mode takes no B");
  OpInfo op{OpKind::pointwise, {x->tensor}, y->tensor};
  if (b) op.inputs.push_back(b->tensor);
  for (const TensorInfo& input : op.inputs)
    if (!broadcasts_to(input.dims, op.output.dims))
      return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "OPERATION_POINTWISE: input dims " + dims_text(input.dims) +
                                                             " do not broadcast to Y's " + dims_text(op.output.dims));
  op.mode = mode;
  op.compute = static_cast<cudnnDataType_t>(integer_or(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT));
  if (const Attribute* a = attribute(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1)) op.alpha1 = a->reals.at(0);
  if (const Attribute* a = attribute(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2)) op.alpha2 = a->reals.at(0);
  d.op = op;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_reduction_op(Descriptor& d) {
  const DescriptorPtr desc = child(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC);
  const DescriptorPtr x = child(d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC);
  const DescriptorPtr y = child(d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC);
  if (!desc || !x || !y) return fail(CUDNN_STATUS_BAD_PARAM, "OPERATION_REDUCTION: needs its descriptor, X and Y");
  if (!broadcasts_to(y->tensor.dims, x->tensor.dims))
    return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "OPERATION_REDUCTION: Y's dims " + dims_text(y->tensor.dims) +
                                                           " must equal X's " + dims_text(x->tensor.dims) + " or be 1");
  const int64_t reduce = integer_or(*desc, CUDNN_ATTR_REDUCTION_OPERATOR, -1);
  if (reduce < CUDNN_REDUCE_TENSOR_ADD || reduce > CUDNN_REDUCE_TENSOR_MAX)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "OPERATION_REDUCTION: operator " + std::to_string(reduce) + " not emulated");
  d.op = OpInfo{OpKind::reduction, {x->tensor}, y->tensor};
  d.op.mode = reduce;
  d.op.compute = static_cast<cudnnDataType_t>(integer_or(*desc, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_matmul_op(Descriptor& d) {
  const DescriptorPtr desc = child(d, CUDNN_ATTR_OPERATION_MATMUL_DESC);
  const DescriptorPtr a = child(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC);
  const DescriptorPtr b = child(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC);
  const DescriptorPtr c = child(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC);
  if (!desc || !a || !b || !c) return fail(CUDNN_STATUS_BAD_PARAM, "OPERATION_MATMUL: needs its descriptor, A, B and C");
  const auto &ad = a->tensor.dims, &bd = b->tensor.dims, &cd = c->tensor.dims;
  const size_t rank = cd.size();
  bool fits = rank >= 2 && ad.size() == rank && bd.size() == rank && ad[rank - 2] == cd[rank - 2] &&
              bd[rank - 1] == cd[rank - 1] && ad[rank - 1] == bd[rank - 2];
  for (size_t i = 0; fits && i + 2 < rank; ++i) fits = (ad[i] == cd[i] || ad[i] == 1) && (bd[i] == cd[i] || bd[i] == 1);
  if (!fits)
    return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "OPERATION_MATMUL: C's dims " + dims_text(cd) +
                                                           " do not match A " + dims_text(ad) + " x B " + dims_text(bd));
  d.op = OpInfo{OpKind::matmul, {a->tensor, b->tensor}, c->tensor};
  d.op.compute = static_cast<cudnnDataType_t>(integer_or(*desc, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT));
  return CUDNN_STATUS_SUCCESS;
}

// The dataflow by tensor id: one description per id, every virtual tensor written by exactly one
// operation before it is read, no tensor written twice; the operations put in such an order.
cudnnStatus_t finalize_graph(Descriptor& d) {
  const Attribute* ops = attribute(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (!ops || ops->children.empty()) return fail(CUDNN_STATUS_BAD_PARAM, "OPERATIONGRAPH: no operations");
  auto graph = std::make_shared<GraphInfo>();
  std::map<int64_t, size_t> writer;
  for (size_t i = 0; i < ops->children.size(); ++i) {
    const Descriptor& op = *ops->children[i];
    if (!is_operation(op.type))
      return fail(CUDNN_STATUS_BAD_PARAM, std::string("OPERATIONGRAPH: ") + type_name(op.type) + " is no operation");
    std::vector<TensorInfo> all = op.op.inputs;
    all.push_back(op.op.output);
    for (const TensorInfo& t : all) {
      const auto [place, inserted] = graph->tensors.emplace(t.uid, t);
      if (!inserted && !(place->second == t))
        return fail(CUDNN_STATUS_BAD_PARAM,
                    "OPERATIONGRAPH: two different tensors have unique id " + std::to_string(t.uid));
    }
    if (!writer.emplace(op.op.output.uid, i).second)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "OPERATIONGRAPH: tensor " + std::to_string(op.op.output.uid) + " is written by two operations");
  }
  for (const auto& [uid, t] : graph->tensors)
    if (t.is_virtual && !writer.count(uid))
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "OPERATIONGRAPH: virtual tensor " + std::to_string(uid) + " is read but no operation writes it");
  // Kahn's order: an operation runs once every virtual tensor it reads is written.
  std::vector<bool> done(ops->children.size(), false);
  std::set<int64_t> written;
  for (size_t placed = 0; placed < ops->children.size();) {
    bool progress = false;
    for (size_t i = 0; i < ops->children.size(); ++i) {
      if (done[i]) continue;
      const OpInfo& op = ops->children[i]->op;
      const bool ready = std::all_of(op.inputs.begin(), op.inputs.end(), [&](const TensorInfo& t) {
        return !writer.count(t.uid) || written.count(t.uid);
      });
      if (!ready) continue;
      graph->ops.push_back(op);
      written.insert(op.output.uid);
      done[i] = true;
      ++placed;
      progress = true;
    }
    if (!progress) return fail(CUDNN_STATUS_BAD_PARAM, "OPERATIONGRAPH: the operations form a cycle");
  }
  d.graph = graph;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_with_graph(Descriptor& d, int name, cudnnBackendDescriptorType_t expected, const char* what) {
  const DescriptorPtr source = child(d, name);
  if (!source || source->type != expected || !source->graph)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(what) + ": needs a finalized " + type_name(expected));
  d.graph = source->graph;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_variant_pack(Descriptor& d) {
  const Attribute* uids = attribute(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attribute* pointers = attribute(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  if (!uids || !pointers || uids->integers.size() != pointers->pointers.size())
    return fail(CUDNN_STATUS_BAD_PARAM, "VARIANT_PACK: as many data pointers as unique ids");
  const std::set<int64_t> distinct(uids->integers.begin(), uids->integers.end());
  if (distinct.size() != uids->integers.size())
    return fail(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, "VARIANT_PACK: a unique id appears twice");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize(Descriptor& d) {
  switch (d.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return finalize_tensor(d);
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      return attribute(d, CUDNN_ATTR_POINTWISE_MODE) ? CUDNN_STATUS_SUCCESS
                                                     : fail(CUDNN_STATUS_BAD_PARAM, "POINTWISE: no mode");
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
      return attribute(d, CUDNN_ATTR_REDUCTION_OPERATOR) ? CUDNN_STATUS_SUCCESS
                                                         : fail(CUDNN_STATUS_BAD_PARAM, "REDUCTION: no operator");
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR: return CUDNN_STATUS_SUCCESS;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return finalize_pointwise_op(d);
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return finalize_reduction_op(d);
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return finalize_matmul_op(d);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return finalize_graph(d);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      return finalize_with_graph(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                                 "ENGINEHEUR");
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      if (integer_or(d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0) != 0)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, "ENGINE: the emulated cuDNN has engine 0 only");
      return finalize_with_graph(d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                                 "ENGINE");
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      return finalize_with_graph(d, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "ENGINECFG");
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      return finalize_with_graph(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                 "EXECUTION_PLAN");
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return finalize_variant_pack(d);
  }
  return fail(CUDNN_STATUS_NOT_SUPPORTED, "unknown descriptor type");
}

// ---- execution ----

// A tensor's memory during an execution: its own (non-virtual), the caller's host scalar
// (by value), or scratch (virtual, packed row-major).
struct Buffer {
  const TensorInfo* info;
  void* data;
  std::vector<int64_t> strides;
};

double load(const Buffer& b, int64_t offset) {
  switch (b.info->type) {
    case CUDNN_DATA_FLOAT: return static_cast<const float*>(b.data)[offset];
    case CUDNN_DATA_DOUBLE: return static_cast<const double*>(b.data)[offset];
    case CUDNN_DATA_BFLOAT16: return static_cast<float>(static_cast<const mcdl::bf16*>(b.data)[offset]);
    case CUDNN_DATA_INT32: return static_cast<const int32_t*>(b.data)[offset];
    case CUDNN_DATA_INT64: return static_cast<double>(static_cast<const int64_t*>(b.data)[offset]);
    default: return 0;  // HALF: refused by the heuristics
  }
}

void store(const Buffer& b, int64_t offset, double value) {
  switch (b.info->type) {
    case CUDNN_DATA_FLOAT: static_cast<float*>(b.data)[offset] = static_cast<float>(value); break;
    case CUDNN_DATA_DOUBLE: static_cast<double*>(b.data)[offset] = value; break;
    case CUDNN_DATA_BFLOAT16: static_cast<mcdl::bf16*>(b.data)[offset] = mcdl::bf16(static_cast<float>(value)); break;
    case CUDNN_DATA_INT32: static_cast<int32_t*>(b.data)[offset] = static_cast<int32_t>(value); break;
    case CUDNN_DATA_INT64: static_cast<int64_t*>(b.data)[offset] = static_cast<int64_t>(value); break;
    default: break;
  }
}

size_t element_bytes(cudnnDataType_t type) {
  return type == CUDNN_DATA_DOUBLE || type == CUDNN_DATA_INT64 ? 8 : type == CUDNN_DATA_FLOAT || type == CUDNN_DATA_INT32 ? 4 : 2;
}

std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

int64_t count_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The multi-index of flat position `flat` (row-major over `dims`).
std::vector<int64_t> index_of(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    index[i] = flat % dims[i];
    flat /= dims[i];
  }
  return index;
}

// The offset of `index` in `b`, each dimension of size 1 in b taking position 0 (broadcast).
int64_t offset_of(const Buffer& b, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) offset += (b.info->dims[i] == 1 ? 0 : index[i]) * b.strides[i];
  return offset;
}

// The compute type's rounding of an intermediate value.
double in_compute(cudnnDataType_t compute, double value) {
  return compute == CUDNN_DATA_DOUBLE ? value : static_cast<double>(static_cast<float>(value));
}

double apply_pointwise(int64_t mode, double x, double b) {
  switch (mode) {
    case CUDNN_POINTWISE_ADD: return x + b;
    case CUDNN_POINTWISE_MUL: return x * b;
    case CUDNN_POINTWISE_MIN: return std::min(x, b);
    case CUDNN_POINTWISE_MAX: return std::max(x, b);
    case CUDNN_POINTWISE_DIV: return x / b;
    case CUDNN_POINTWISE_SUB: return x - b;
    case CUDNN_POINTWISE_SQRT: return std::sqrt(x);
    case CUDNN_POINTWISE_EXP: return std::exp(x);
    case CUDNN_POINTWISE_LOG: return std::log(x);
    default: return x;  // IDENTITY
  }
}

void run_pointwise(const OpInfo& op, const std::vector<Buffer>& in, const Buffer& out) {
  const bool single = op.compute != CUDNN_DATA_DOUBLE;
  for (int64_t flat = 0, n = count_of(op.output.dims); flat < n; ++flat) {
    const std::vector<int64_t> index = index_of(flat, op.output.dims);
    const double x = in_compute(op.compute, op.alpha1 * load(in[0], offset_of(in[0], index)));
    const double b = in.size() > 1 ? in_compute(op.compute, op.alpha2 * load(in[1], offset_of(in[1], index))) : 0;
    // In fp32 the formula itself runs in float, as a float kernel would.
    const double y = single ? static_cast<double>(static_cast<float>(
                                  apply_pointwise(op.mode, static_cast<float>(x), static_cast<float>(b))))
                            : apply_pointwise(op.mode, x, b);
    store(out, offset_of(out, index), y);
  }
}

void run_reduction(const OpInfo& op, const Buffer& in, const Buffer& out) {
  const std::vector<int64_t>& x_dims = op.inputs[0].dims;
  const double start = op.mode == CUDNN_REDUCE_TENSOR_ADD   ? 0.0
                       : op.mode == CUDNN_REDUCE_TENSOR_MUL ? 1.0
                       : op.mode == CUDNN_REDUCE_TENSOR_MIN ? std::numeric_limits<double>::infinity()
                                                            : -std::numeric_limits<double>::infinity();
  std::vector<double> totals(static_cast<size_t>(count_of(op.output.dims)), start);
  const std::vector<int64_t> y_packed = packed_strides(op.output.dims);
  for (int64_t flat = 0, n = count_of(x_dims); flat < n; ++flat) {  // X in index order
    const std::vector<int64_t> index = index_of(flat, x_dims);
    int64_t slot = 0;
    for (size_t i = 0; i < index.size(); ++i) slot += (op.output.dims[i] == 1 ? 0 : index[i]) * y_packed[i];
    double& total = totals[static_cast<size_t>(slot)];
    const double x = load(in, offset_of(in, index));
    switch (op.mode) {
      case CUDNN_REDUCE_TENSOR_ADD: total = in_compute(op.compute, total + x); break;
      case CUDNN_REDUCE_TENSOR_MUL: total = in_compute(op.compute, total * x); break;
      case CUDNN_REDUCE_TENSOR_MIN: total = std::min(total, x); break;
      default: total = std::max(total, x); break;
    }
  }
  for (int64_t slot = 0; slot < static_cast<int64_t>(totals.size()); ++slot)
    store(out, offset_of(out, index_of(slot, op.output.dims)), totals[static_cast<size_t>(slot)]);
}

void run_matmul(const OpInfo& op, const Buffer& a, const Buffer& b, const Buffer& c) {
  const std::vector<int64_t>& c_dims = op.output.dims;
  const size_t rank = c_dims.size();
  const int64_t k_count = op.inputs[0].dims[rank - 1];
  const int64_t a_k_stride = a.strides[rank - 1], b_k_stride = b.strides[rank - 2];
  for (int64_t flat = 0, n = count_of(c_dims); flat < n; ++flat) {
    std::vector<int64_t> index = index_of(flat, c_dims);
    const int64_t m = index[rank - 2], col = index[rank - 1];
    std::vector<int64_t> a_index = index, b_index = index;
    a_index[rank - 2] = m, a_index[rank - 1] = 0;
    b_index[rank - 2] = 0, b_index[rank - 1] = col;
    const int64_t a0 = offset_of(a, a_index), b0 = offset_of(b, b_index);
    double total = 0;
    for (int64_t k = 0; k < k_count; ++k)
      total = in_compute(op.compute, total + in_compute(op.compute, load(a, a0 + k * a_k_stride) *
                                                                        load(b, b0 + k * b_k_stride)));
    store(c, offset_of(c, index), total);
  }
}

cudnnStatus_t execute(const GraphInfo& graph, const Descriptor& pack) {
  const Attribute& uids = *attribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attribute& pointers = *attribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  std::map<int64_t, void*> given;
  for (size_t i = 0; i < uids.integers.size(); ++i) given[uids.integers[i]] = pointers.pointers[i];
  std::map<int64_t, Buffer> buffers;
  std::vector<std::vector<unsigned char>> scratch;
  for (const auto& [uid, t] : graph.tensors) {
    if (t.is_virtual) {
      if (given.count(uid))
        return fail(CUDNN_STATUS_BAD_PARAM, "execute: the variant pack gives virtual tensor " + std::to_string(uid));
      scratch.emplace_back(static_cast<size_t>(count_of(t.dims)) * element_bytes(t.type));
      buffers[uid] = Buffer{&t, scratch.back().data(), packed_strides(t.dims)};
      continue;
    }
    const auto found = given.find(uid);
    if (found == given.end() || !found->second)
      return fail(CUDNN_STATUS_BAD_PARAM, "execute: the variant pack has no pointer for tensor " + std::to_string(uid));
    buffers[uid] = Buffer{&t, found->second, t.strides};
  }
  for (const auto& [uid, pointer] : given)
    if (!graph.tensors.count(uid))
      return fail(CUDNN_STATUS_BAD_PARAM, "execute: the variant pack names tensor " + std::to_string(uid) +
                                              ", which the graph does not have");
  for (const OpInfo& op : graph.ops) {
    std::vector<Buffer> in;
    for (const TensorInfo& t : op.inputs) in.push_back(buffers.at(t.uid));
    const Buffer& out = buffers.at(op.output.uid);
    switch (op.kind) {
      case OpKind::pointwise: run_pointwise(op, in, out); break;
      case OpKind::reduction: run_reduction(op, in[0], out); break;
      case OpKind::matmul: run_matmul(op, in[0], in[1], out); break;
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

// The emulated engine takes a graph whose tensors and compute types it runs (not HALF).
bool engine_supports(const GraphInfo& graph) {
  for (const auto& [uid, t] : graph.tensors)
    if (t.type == CUDNN_DATA_HALF) return false;
  for (const OpInfo& op : graph.ops)
    if (op.compute != CUDNN_DATA_FLOAT && op.compute != CUDNN_DATA_DOUBLE) return false;
  return true;
}

DescriptorPtr make_descriptor(cudnnBackendDescriptorType_t type) {
  auto d = std::make_shared<Descriptor>();
  d->type = type;
  const std::lock_guard lock(registry_mutex);
  registry[d.get()] = d;
  return d;
}

// Fills a caller-created engine configuration with engine 0 of `graph`.
cudnnStatus_t fill_engine_config(Descriptor& config, const std::shared_ptr<const GraphInfo>& graph) {
  if (config.type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || config.finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, "ENGINEHEUR results: expected fresh ENGINECFG descriptors");
  const auto engine = std::make_shared<Descriptor>();  // owned by the configuration alone
  engine->type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
  engine->graph = graph;
  engine->finalized = true;
  config.attributes[CUDNN_ATTR_ENGINECFG_ENGINE] = Attribute{CUDNN_TYPE_BACKEND_DESCRIPTOR, {}, {}, {}, {engine}};
  config.graph = graph;
  config.finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

size_t cudnnGetVersion(void) { return 91400; }  // the API of cuDNN 9.14, the GPU machines' version

int mcdl_cudnn_emulated() { return 1; }

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND: return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT: return "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES: return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE: return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
  }
  return "CUDNN_STATUS_UNKNOWN";
}

void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (!message || max_size == 0) return;
  const size_t n = std::min(last_error.size(), max_size - 1);
  std::memcpy(message, last_error.data(), n);
  message[n] = '\0';
  last_error.clear();
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: null handle pointer");
  *handle = new cudnnContext();
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnSetStream: null handle");
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* descriptor) {
  if (!descriptor) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendCreateDescriptor: null pointer");
  if (std::string(type_name(type)) == "unknown")
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "descriptor type " + std::to_string(type) + " not emulated");
  *descriptor = make_descriptor(type).get();
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  const std::lock_guard lock(registry_mutex);
  if (registry.erase(descriptor) == 0) return fail(CUDNN_STATUS_BAD_PARAM, "destroy: no such descriptor");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t element_count, const void* elements) {
  const DescriptorPtr d = find(descriptor);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, "set attribute: no such descriptor");
  if (d->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(type_name(d->type)) + ": already finalized, attribute " +
                                            std::to_string(name) + " cannot change");
  if (!attribute_allowed(d->type, name, type))
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(type_name(d->type)) + ": attribute " + std::to_string(name) +
                                            " with element type " + std::to_string(type) + " is not one it takes");
  if (element_count < 1 || !elements)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "set attribute: no elements");
  Attribute value;
  if (const cudnnStatus_t status = read_elements(type, element_count, elements, value); status != CUDNN_STATUS_SUCCESS)
    return status;
  d->attributes[name] = std::move(value);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  const DescriptorPtr d = find(descriptor);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, "finalize: no such descriptor");
  if (d->finalized) return fail(CUDNN_STATUS_BAD_PARAM, std::string(type_name(d->type)) + ": finalized twice");
  const cudnnStatus_t status = finalize(*d);
  d->finalized = status == CUDNN_STATUS_SUCCESS;
  return status;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested_element_count,
                                       int64_t* element_count, void* elements) {
  const DescriptorPtr d = find(descriptor);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, "get attribute: no such descriptor");
  if (!d->finalized) return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "get attribute: descriptor not finalized");
  if (!element_count) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "get attribute: null element count");
  if (d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS &&
      type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    const int64_t available = engine_supports(*d->graph) ? 1 : 0;
    if (requested_element_count == 0) {
      *element_count = available;
      return CUDNN_STATUS_SUCCESS;
    }
    if (!elements) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "ENGINEHEUR results: null array");
    const int64_t filled = std::min(available, requested_element_count);
    for (int64_t i = 0; i < filled; ++i) {
      const DescriptorPtr config = find(static_cast<cudnnBackendDescriptor_t*>(elements)[i]);
      if (!config) return fail(CUDNN_STATUS_BAD_PARAM, "ENGINEHEUR results: no such descriptor");
      if (const cudnnStatus_t status = fill_engine_config(*config, d->graph); status != CUDNN_STATUS_SUCCESS)
        return status;
    }
    *element_count = filled;
    return CUDNN_STATUS_SUCCESS;
  }
  if (d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE &&
      type == CUDNN_TYPE_INT64) {
    if (requested_element_count >= 1 && elements) static_cast<int64_t*>(elements)[0] = 0;
    *element_count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  return fail(CUDNN_STATUS_NOT_SUPPORTED, std::string(type_name(d->type)) + ": reading attribute " +
                                              std::to_string(name) + " is not emulated");
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t execution_plan,
                                  cudnnBackendDescriptor_t variant_pack) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "execute: null handle");
  const DescriptorPtr plan = find(execution_plan), pack = find(variant_pack);
  if (!plan || plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !plan->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, "execute: expected a finalized execution plan");
  if (!pack || pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !pack->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM, "execute: expected a finalized variant pack");
  return execute(*plan->graph, *pack);
}

}  // extern "C"
