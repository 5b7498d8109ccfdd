// The emulated cuDNN: the backend (graph) API of kernels/emu/cudnn_api.h with cuDNN's documented
// semantics, running operation graphs on the host. Built as libmcdl_cudnn_emu.so and loaded by the
// emulator build's kernels/cuda/cudnn.cu exactly as the GPU build loads libcudnn.so.9, so the
// engine's graphs, plans and variant packs are built and run without a GPU. It reports version
// 9.14.0: the API it emulates is cuDNN 9.14's.
//
// Emulated: handles; descriptors created by type, each attribute checked against its descriptor's
// type, its element type and its element count, nothing set after finalize, a descriptor attribute
// accepted only once finalized and then shared (the caller may destroy its own handle at once);
// tensors (FLOAT, DOUBLE, BFLOAT16, INT32, INT64 data; HALF is described but no engine runs it)
// with cuDNN's byte alignment rule; matrix products with broadcast batch dimensions, point-wise
// operations with broadcast inputs and alpha scales, reductions to the dimensions left at 1; an
// operation graph's dataflow by tensor id, in any order of its operations; heuristics that offer
// one engine (none for a graph whose types it does not run); plans without workspace; variant
// packs, with by-value scalars read from host memory and every pointer checked against its
// tensor's alignment. Numbers: a virtual tensor holds its declared type (bf16 rounded to nearest
// even, once, from the exact result), products and reductions accumulate in their compute type in
// index order (k in order, no fused multiply-add), point-wise operations compute in their math
// precision (exp and log in double, rounded once to float), and every result rounds once to its
// output's type (integers as kernels/bf16.h's from_double_value converts).
//
// Not emulated: speed, fusion, workspaces, and the real library's support surface: cuDNN offers an
// engine only for graphs one of its engines implements (the fused attention's pattern, say), while
// this one runs any graph of the operations above. Whether cuDNN's engines take a graph the real
// library says without a GPU, told about a device (attention_bf16_cudnn_engine_verdicts); the
// emulator describes no device.
// Where the emulator refuses is stricter than cuDNN too: cuDNN 9.26 (tried on a host without a
// GPU) accepts an unfinalized tensor as an attribute, broadcast shapes that do not fit, a unary
// mode given B, a virtual tensor no operation writes, or an id twice in a variant pack, and leaves
// them to its heuristics or execution; the emulator refuses each where it is set or finalized,
// with the reason in cudnnGetLastErrorString. Emulated device memory is host memory and emulated
// device work is done when its call returns, so cudnnBackendExecute computes at once on the
// calling thread, unless its handle's stream is being captured into a CUDA graph: the program that
// loads the library tells it how to queue work on a stream (mcdl_cudnn_emu_set_stream_queue).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/emu/cudnn_api.h"
#include "kernels/emu/cudnn_emu_graph.h"

struct cudnnContext {
  cudaStream_t stream = nullptr;
};

namespace mcdl::emu::cudnn_emu {

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

size_t element_bytes(int64_t type) {
  switch (type) {
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64: return 8;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32: return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 2;
  }
  return 0;  // not a data type the emulator knows
}

}  // namespace mcdl::emu::cudnn_emu

using namespace mcdl::emu::cudnn_emu;

namespace {

// ---- descriptors and handles ----

struct Descriptor;
using DescriptorPtr = std::shared_ptr<Descriptor>;

// One attribute as set: its element type and its elements, by kind.
struct Attribute {
  cudnnBackendAttributeType_t type;
  std::vector<int64_t> integers;        // INT64, and the enums (data type, modes, operator, bool)
  std::vector<double> reals;            // FLOAT, DOUBLE
  std::vector<void*> pointers;          // VOID_PTR, HANDLE
  std::vector<DescriptorPtr> children;  // BACKEND_DESCRIPTOR
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

// What the caller holds (live descriptors and handles), so that a stale or foreign one is refused
// rather than followed. Never destroyed: the engine may release its descriptors while exiting.
struct Registry {
  std::mutex mutex;
  std::map<const void*, DescriptorPtr> descriptors;
  std::set<const cudnnContext*> handles;
};

Registry& registry() {
  static Registry* const instance = new Registry();
  return *instance;
}

// The live descriptor behind the caller's `handle`, or the status that refuses it.
cudnnStatus_t lookup(const void* handle, const char* call, DescriptorPtr& out) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null descriptor");
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const auto found = r.descriptors.find(handle);
  if (found == r.descriptors.end())
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": not a live descriptor (destroyed, or never created)");
  out = found->second;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t check_handle(const cudnnContext* handle, const char* call) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null handle");
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  if (!r.handles.count(handle))
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": not a live handle (destroyed, or never created)");
  return CUDNN_STATUS_SUCCESS;
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
    case CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR: return nullptr;  // a real device's description: not emulated
  }
  return nullptr;
}

bool is_operation(cudnnBackendDescriptorType_t type) {
  return type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR || type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR;
}

// ---- attributes ----

// What a settable attribute takes: its element type (a FLOAT one also takes DOUBLE, as cuDNN's
// alphas do) and how many elements.
struct Rule {
  const char* name;
  cudnnBackendAttributeType_t type;
  int64_t min_count, max_count;
};

constexpr int64_t any_count = std::numeric_limits<int64_t>::max();

const Rule* rule_for(cudnnBackendDescriptorType_t descriptor, int attribute) {
  static const std::map<std::pair<int, int>, Rule> rules = {
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_DATA_TYPE}, {"DATA_TYPE", CUDNN_TYPE_DATA_TYPE, 1, 1}},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_DIMENSIONS}, {"DIMENSIONS", CUDNN_TYPE_INT64, 1, 8}},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_STRIDES}, {"STRIDES", CUDNN_TYPE_INT64, 1, 8}},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_UNIQUE_ID}, {"UNIQUE_ID", CUDNN_TYPE_INT64, 1, 1}},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT}, {"BYTE_ALIGNMENT", CUDNN_TYPE_INT64, 1, 1}},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_IS_VIRTUAL}, {"IS_VIRTUAL", CUDNN_TYPE_BOOLEAN, 1, 1}},
      {{CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_IS_BY_VALUE}, {"IS_BY_VALUE", CUDNN_TYPE_BOOLEAN, 1, 1}},
      {{CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MODE}, {"MODE", CUDNN_TYPE_POINTWISE_MODE, 1, 1}},
      {{CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MATH_PREC}, {"MATH_PREC", CUDNN_TYPE_DATA_TYPE, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR},
       {"PW_DESCRIPTOR", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC},
       {"XDESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_BDESC},
       {"BDESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_YDESC},
       {"YDESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1},
       {"ALPHA1", CUDNN_TYPE_FLOAT, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2},
       {"ALPHA2", CUDNN_TYPE_FLOAT, 1, 1}},
      {{CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_ATTR_REDUCTION_OPERATOR},
       {"OPERATOR", CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, 1}},
      {{CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_ATTR_REDUCTION_COMP_TYPE}, {"COMP_TYPE", CUDNN_TYPE_DATA_TYPE, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, CUDNN_ATTR_OPERATION_REDUCTION_DESC},
       {"DESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, CUDNN_ATTR_OPERATION_REDUCTION_XDESC},
       {"XDESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, CUDNN_ATTR_OPERATION_REDUCTION_YDESC},
       {"YDESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_MATMUL_DESCRIPTOR, CUDNN_ATTR_MATMUL_COMP_TYPE}, {"COMP_TYPE", CUDNN_TYPE_DATA_TYPE, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_ADESC},
       {"ADESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_BDESC},
       {"BDESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_CDESC},
       {"CDESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_DESC},
       {"DESC", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_ATTR_OPERATIONGRAPH_HANDLE},
       {"HANDLE", CUDNN_TYPE_HANDLE, 1, 1}},
      {{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_ATTR_OPERATIONGRAPH_OPS},
       {"OPS", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, any_count}},
      {{CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH},
       {"OPERATION_GRAPH", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_ATTR_ENGINEHEUR_MODE}, {"MODE", CUDNN_TYPE_HEUR_MODE, 1, 1}},
      {{CUDNN_BACKEND_ENGINE_DESCRIPTOR, CUDNN_ATTR_ENGINE_OPERATION_GRAPH},
       {"OPERATION_GRAPH", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_ENGINE_DESCRIPTOR, CUDNN_ATTR_ENGINE_GLOBAL_INDEX}, {"GLOBAL_INDEX", CUDNN_TYPE_INT64, 1, 1}},
      {{CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, CUDNN_ATTR_ENGINECFG_ENGINE},
       {"ENGINE", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_ATTR_EXECUTION_PLAN_HANDLE},
       {"HANDLE", CUDNN_TYPE_HANDLE, 1, 1}},
      {{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG},
       {"ENGINE_CONFIG", CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1}},
      {{CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS},
       {"UNIQUE_IDS", CUDNN_TYPE_INT64, 0, any_count}},
      {{CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS},
       {"DATA_POINTERS", CUDNN_TYPE_VOID_PTR, 0, any_count}},
      {{CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_WORKSPACE},
       {"WORKSPACE", CUDNN_TYPE_VOID_PTR, 1, 1}},
  };
  const auto found = rules.find({descriptor, attribute});
  return found == rules.end() ? nullptr : &found->second;
}

// A descriptor-valued element: a live descriptor, finalized.
cudnnStatus_t read_child(const void* handle, DescriptorPtr& out) {
  if (const cudnnStatus_t status = lookup(handle, "a descriptor attribute", out); status != CUDNN_STATUS_SUCCESS)
    return status;
  if (!out->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                std::string("a descriptor attribute names an unfinalized ") + type_name(out->type));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t check_live_handle_elements(const Attribute& a) {
  for (void* handle : a.pointers)
    if (const cudnnStatus_t status = check_handle(static_cast<const cudnnContext*>(handle), "a handle attribute");
        status != CUDNN_STATUS_SUCCESS)
      return status;
  return CUDNN_STATUS_SUCCESS;
}

// Reads `count` elements of `type` from the caller's array into `out`.
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
      case CUDNN_TYPE_CHAR: out.integers.push_back(static_cast<const char*>(elements)[i]); break;
      case CUDNN_TYPE_FLOAT: out.reals.push_back(static_cast<const float*>(elements)[i]); break;
      case CUDNN_TYPE_DOUBLE: out.reals.push_back(static_cast<const double*>(elements)[i]); break;
      case CUDNN_TYPE_VOID_PTR:
      case CUDNN_TYPE_HANDLE: out.pointers.push_back(static_cast<void* const*>(elements)[i]); break;
      case CUDNN_TYPE_BACKEND_DESCRIPTOR: {
        DescriptorPtr child;
        if (const cudnnStatus_t status = read_child(static_cast<void* const*>(elements)[i], child);
            status != CUDNN_STATUS_SUCCESS)
          return status;
        out.children.push_back(std::move(child));
        break;
      }
    }
  }
  return type == CUDNN_TYPE_HANDLE ? check_live_handle_elements(out) : CUDNN_STATUS_SUCCESS;
}

std::string count_text(const Rule& rule) {
  const std::string min = std::to_string(rule.min_count);
  if (rule.max_count == rule.min_count) return min;
  return rule.max_count == any_count ? min + " or more" : min + " to " + std::to_string(rule.max_count);
}

cudnnStatus_t set_attribute(Descriptor& d, int name, cudnnBackendAttributeType_t type, int64_t count,
                            const void* elements) {
  const std::string what = type_name(d.type);
  if (d.finalized)
    return fail(CUDNN_STATUS_BAD_PARAM,
                what + ": already finalized, attribute " + std::to_string(name) + " cannot change");
  const Rule* rule = rule_for(d.type, name);
  if (!rule) return fail(CUDNN_STATUS_BAD_PARAM, what + ": attribute " + std::to_string(name) + " is not one it takes");
  if (type != rule->type && !(rule->type == CUDNN_TYPE_FLOAT && type == CUDNN_TYPE_DOUBLE))
    return fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, what + ": " + rule->name + " takes element type " +
                                                           std::to_string(rule->type) + ", got " +
                                                           std::to_string(type));
  if (count < rule->min_count || count > rule->max_count)
    return fail(CUDNN_STATUS_BAD_PARAM,
                what + ": " + rule->name + " takes " + count_text(*rule) + " elements, got " + std::to_string(count));
  if (count > 0 && !elements)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, what + ": " + rule->name + " given a null array");
  Attribute value;
  if (const cudnnStatus_t status = read_elements(type, count, elements, value); status != CUDNN_STATUS_SUCCESS)
    return status;
  d.attributes[name] = std::move(value);
  return CUDNN_STATUS_SUCCESS;
}

const Attribute* attribute(const Descriptor& d, int name) {
  const auto found = d.attributes.find(name);
  return found == d.attributes.end() ? nullptr : &found->second;
}
int64_t integer_or(const Descriptor& d, int name, int64_t fallback) {
  const Attribute* a = attribute(d, name);
  return a ? a->integers.at(0) : fallback;
}
DescriptorPtr child(const Descriptor& d, int name) {
  const Attribute* a = attribute(d, name);
  return a ? a->children.at(0) : nullptr;
}

// ---- finalize, by descriptor type ----

// Every element count and offset of the tensor, in bytes too, fits in int64: indexing cannot overflow.
bool addressable(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, size_t bytes) {
  int64_t count = static_cast<int64_t>(bytes), last = 0, step = 0;
  for (size_t i = 0; i < dims.size(); ++i)
    if (__builtin_mul_overflow(count, dims[i], &count) || __builtin_mul_overflow(dims[i] - 1, strides[i], &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  return !__builtin_mul_overflow(last, static_cast<int64_t>(bytes), &last);
}

cudnnStatus_t finalize_tensor(Descriptor& d) {
  const Attribute* dims = attribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
  const Attribute* strides = attribute(d, CUDNN_ATTR_TENSOR_STRIDES);
  if (!dims || !strides || !attribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID) || !attribute(d, CUDNN_ATTR_TENSOR_DATA_TYPE))
    return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: the data type, dimensions, strides and unique id must all be set");
  if (dims->integers.size() != strides->integers.size())
    return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: dims " + dims_text(dims->integers) + " but strides " +
                                            dims_text(strides->integers) + " (as many strides as dimensions)");
  for (size_t i = 0; i < dims->integers.size(); ++i)
    if (dims->integers[i] < 1 || strides->integers[i] < 1)
      return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: dimensions and strides must be positive, got dims " +
                                              dims_text(dims->integers) + " strides " + dims_text(strides->integers));
  const int64_t type = integer_or(d, CUDNN_ATTR_TENSOR_DATA_TYPE, -1);
  const size_t bytes = element_bytes(type);
  if (bytes == 0)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "TENSOR: data type " + std::to_string(type) + " not emulated");
  if (!addressable(dims->integers, strides->integers, bytes))
    return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: dims " + dims_text(dims->integers) + " strides " +
                                            dims_text(strides->integers) + " address more than 2^63 bytes");
  d.tensor = TensorInfo{static_cast<cudnnDataType_t>(type),
                        dims->integers,
                        strides->integers,
                        integer_or(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0),
                        integer_or(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 1),
                        integer_or(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, 0) != 0,
                        integer_or(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, 0) != 0};
  // cuDNN's rule, its default alignment being 1: a tensor of wider elements must set it.
  if (d.tensor.alignment < 1 || d.tensor.alignment % static_cast<int64_t>(bytes) != 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR " + std::to_string(d.tensor.uid) + ": byte alignment " +
                                            std::to_string(d.tensor.alignment) + " is not a positive multiple of its " +
                                            std::to_string(bytes) + "-byte elements");
  if (d.tensor.by_value && d.tensor.is_virtual)
    return fail(CUDNN_STATUS_BAD_PARAM, "TENSOR: a by-value tensor cannot be virtual");
  if (d.tensor.by_value && std::any_of(d.tensor.dims.begin(), d.tensor.dims.end(), [](int64_t n) { return n != 1; }))
    return fail(CUDNN_STATUS_BAD_PARAM,
                "TENSOR: a by-value tensor is a scalar (every dimension 1), got dims " + dims_text(d.tensor.dims));
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
         mode == CUDNN_POINTWISE_IDENTITY || mode == CUDNN_POINTWISE_GELU_FWD;
}

cudnnStatus_t finalize_pointwise_op(Descriptor& d) {
  const DescriptorPtr pw = child(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
  const DescriptorPtr x = child(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
  const DescriptorPtr b = child(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
  const DescriptorPtr y = child(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
  if (!pw || !x || !y) return fail(CUDNN_STATUS_BAD_PARAM, "OPERATION_POINTWISE: needs its PW descriptor, X and Y");
  if (pw->type != CUDNN_BACKEND_POINTWISE_DESCRIPTOR || x->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR ||
      y->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR || (b && b->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR))
    return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                "OPERATION_POINTWISE: PW_DESCRIPTOR must be a POINTWISE descriptor, X, B and Y tensors");
  const int64_t mode = integer_or(*pw, CUDNN_ATTR_POINTWISE_MODE, -1);
  // A mode the emulator does not know is left to the heuristics, which offer no engine for it.
  if ((is_binary(mode) || is_unary(mode)) && is_binary(mode) != (b != nullptr))
    return fail(CUDNN_STATUS_BAD_PARAM, is_binary(mode) ? "OPERATION_POINTWISE: a binary mode needs B"
                                                        : "OPERATION_POINTWISE: a unary mode takes no B");
  OpInfo op{OpKind::pointwise, {x->tensor}, y->tensor};
  if (b) op.inputs.push_back(b->tensor);
  for (const TensorInfo& input : op.inputs)
    if (!broadcasts_to(input.dims, op.output.dims))
      return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "OPERATION_POINTWISE: input dims " + dims_text(input.dims) +
                                                             " do not broadcast to Y's " + dims_text(op.output.dims));
  op.mode = mode;
  op.compute = integer_or(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
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
  if (desc->type != CUDNN_BACKEND_REDUCTION_DESCRIPTOR || x->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR ||
      y->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR)
    return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                "OPERATION_REDUCTION: DESC must be a REDUCTION descriptor, X and Y tensors");
  if (!broadcasts_to(y->tensor.dims, x->tensor.dims))
    return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "OPERATION_REDUCTION: Y's dims " + dims_text(y->tensor.dims) +
                                                           " must equal X's " + dims_text(x->tensor.dims) + " or be 1");
  d.op = OpInfo{OpKind::reduction, {x->tensor}, y->tensor};
  d.op.mode = integer_or(*desc, CUDNN_ATTR_REDUCTION_OPERATOR, -1);
  d.op.compute = integer_or(*desc, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_matmul_op(Descriptor& d) {
  const DescriptorPtr desc = child(d, CUDNN_ATTR_OPERATION_MATMUL_DESC);
  const DescriptorPtr a = child(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC);
  const DescriptorPtr b = child(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC);
  const DescriptorPtr c = child(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC);
  if (!desc || !a || !b || !c)
    return fail(CUDNN_STATUS_BAD_PARAM, "OPERATION_MATMUL: needs its descriptor, A, B and C");
  if (desc->type != CUDNN_BACKEND_MATMUL_DESCRIPTOR || a->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR ||
      b->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR || c->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR)
    return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                "OPERATION_MATMUL: DESC must be a MATMUL descriptor, A, B and C tensors");
  const auto &ad = a->tensor.dims, &bd = b->tensor.dims, &cd = c->tensor.dims;
  const size_t rank = cd.size();
  bool fits = rank >= 2 && ad.size() == rank && bd.size() == rank && ad[rank - 2] == cd[rank - 2] &&
              bd[rank - 1] == cd[rank - 1] && ad[rank - 1] == bd[rank - 2];
  for (size_t i = 0; fits && i + 2 < rank; ++i) fits = (ad[i] == cd[i] || ad[i] == 1) && (bd[i] == cd[i] || bd[i] == 1);
  if (!fits)
    return fail(
        CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
        "OPERATION_MATMUL: C's dims " + dims_text(cd) + " do not match A " + dims_text(ad) + " x B " + dims_text(bd));
  d.op = OpInfo{OpKind::matmul, {a->tensor, b->tensor}, c->tensor};
  d.op.compute = integer_or(*desc, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT);
  return CUDNN_STATUS_SUCCESS;
}

// Adds the operations' tensors by uid (one description per uid) and notes which operation writes
// each (no tensor twice, no by-value tensor).
cudnnStatus_t collect_tensors(const std::vector<DescriptorPtr>& ops, GraphInfo& graph,
                              std::map<int64_t, size_t>& writer) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const Descriptor& op = *ops[i];
    if (!is_operation(op.type))
      return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                  std::string("OPERATIONGRAPH: OPS holds a ") + type_name(op.type) + ", which is no operation");
    std::vector<TensorInfo> all = op.op.inputs;
    all.push_back(op.op.output);
    for (const TensorInfo& t : all) {
      const auto [place, inserted] = graph.tensors.emplace(t.uid, t);
      if (!inserted && !(place->second == t))
        return fail(CUDNN_STATUS_BAD_PARAM,
                    "OPERATIONGRAPH: two different tensor descriptors have unique id " + std::to_string(t.uid));
    }
    const int64_t out = op.op.output.uid;
    if (op.op.output.by_value)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "OPERATIONGRAPH: by-value tensor " + std::to_string(out) + " is an operation's output");
    if (!writer.emplace(out, i).second)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "OPERATIONGRAPH: tensor " + std::to_string(out) + " is written by two operations");
  }
  for (const auto& [uid, t] : graph.tensors)
    if (t.is_virtual && !writer.count(uid))
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "OPERATIONGRAPH: virtual tensor " + std::to_string(uid) + " is read but no operation writes it");
  return CUDNN_STATUS_SUCCESS;
}

// The dataflow by tensor id, the operations put in an order where each runs after the operations
// that write what it reads (Kahn's order; the caller's order need not be one).
cudnnStatus_t finalize_graph(Descriptor& d) {
  const Attribute* ops_set = attribute(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (!ops_set) return fail(CUDNN_STATUS_BAD_PARAM, "OPERATIONGRAPH: no operations");
  const std::vector<DescriptorPtr>& ops = ops_set->children;
  auto graph = std::make_shared<GraphInfo>();
  std::map<int64_t, size_t> writer;
  if (const cudnnStatus_t status = collect_tensors(ops, *graph, writer); status != CUDNN_STATUS_SUCCESS) return status;
  std::vector<bool> placed(ops.size(), false);
  std::set<int64_t> written;
  while (graph->ops.size() < ops.size()) {
    bool progress = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      const OpInfo& op = ops[i]->op;
      if (placed[i] || !std::all_of(op.inputs.begin(), op.inputs.end(),
                                    [&](const TensorInfo& t) { return !writer.count(t.uid) || written.count(t.uid); }))
        continue;
      graph->ops.push_back(op);
      written.insert(op.output.uid);
      placed[i] = progress = true;
    }
    if (!progress) return fail(CUDNN_STATUS_BAD_PARAM, "OPERATIONGRAPH: the operations form a cycle");
  }
  d.graph = graph;
  return CUDNN_STATUS_SUCCESS;
}

bool emulated_mode(const OpInfo& op) {
  switch (op.kind) {
    case OpKind::pointwise: return is_binary(op.mode) || is_unary(op.mode);
    case OpKind::reduction: return op.mode >= CUDNN_REDUCE_TENSOR_ADD && op.mode <= CUDNN_REDUCE_TENSOR_MAX;
    case OpKind::matmul: return true;
  }
  return false;
}

// Why the emulated engine cannot run `graph` (empty when it can): a data type, compute type or
// mode it does not emulate.
std::string unsupported(const GraphInfo& graph) {
  for (const auto& [uid, t] : graph.tensors)
    if (t.type == CUDNN_DATA_HALF) return "tensor " + std::to_string(uid) + " is HALF, which no emulated engine runs";
  for (const OpInfo& op : graph.ops) {
    if (op.compute != CUDNN_DATA_FLOAT && op.compute != CUDNN_DATA_DOUBLE)
      return "the operation writing tensor " + std::to_string(op.output.uid) + " computes in data type " +
             std::to_string(op.compute) + " (FLOAT or DOUBLE run)";
    if (!emulated_mode(op))
      return "the operation writing tensor " + std::to_string(op.output.uid) + " has mode " + std::to_string(op.mode) +
             ", which is not emulated";
  }
  return "";
}

cudnnStatus_t finalize_with_graph(Descriptor& d, int name, cudnnBackendDescriptorType_t expected) {
  const DescriptorPtr source = child(d, name);
  if (!source || source->type != expected)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(type_name(d.type)) + ": needs a finalized " + type_name(expected));
  d.graph = source->graph;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_engine(Descriptor& d) {
  if (const cudnnStatus_t status =
          finalize_with_graph(d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
      status != CUDNN_STATUS_SUCCESS)
    return status;
  if (integer_or(d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0) != 0)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "ENGINE: the emulated cuDNN has engine 0 only");
  if (const std::string why = unsupported(*d.graph); !why.empty())
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "ENGINE: engine 0 does not run this graph: " + why);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_variant_pack(Descriptor& d) {
  const Attribute* uids = attribute(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attribute* pointers = attribute(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  const std::vector<int64_t> ids = uids ? uids->integers : std::vector<int64_t>{};
  const size_t pointer_count = pointers ? pointers->pointers.size() : 0;
  if (ids.size() != pointer_count)
    return fail(CUDNN_STATUS_BAD_PARAM, "VARIANT_PACK: " + std::to_string(ids.size()) + " unique ids but " +
                                            std::to_string(pointer_count) + " data pointers");
  std::set<int64_t> seen;
  for (int64_t uid : ids)
    if (!seen.insert(uid).second)
      return fail(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES,
                  "VARIANT_PACK: unique id " + std::to_string(uid) + " appears twice");
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
      return finalize_with_graph(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return finalize_engine(d);
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      return finalize_with_graph(d, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      return finalize_with_graph(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return finalize_variant_pack(d);
    case CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR: break;  // never created here
  }
  return fail(CUDNN_STATUS_NOT_SUPPORTED, "unknown descriptor type");
}

// ---- heuristics ----

// Fills a caller-created engine configuration with engine 0 of `graph`, and finalizes it.
cudnnStatus_t fill_engine_config(Descriptor& config, const std::shared_ptr<const GraphInfo>& graph) {
  if (config.type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || config.finalized)
    return fail(CUDNN_STATUS_BAD_PARAM,
                std::string("ENGINEHEUR results: expected unfinalized ENGINECFG descriptors, got ") +
                    (config.finalized ? "a finalized " : "a ") + type_name(config.type));
  const auto engine = std::make_shared<Descriptor>();  // owned by the configuration alone
  engine->type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
  engine->graph = graph;
  engine->finalized = true;
  config.attributes[CUDNN_ATTR_ENGINECFG_ENGINE] = Attribute{CUDNN_TYPE_BACKEND_DESCRIPTOR, {}, {}, {}, {engine}};
  config.graph = graph;
  config.finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

// ENGINEHEUR_RESULTS: how many engines there are (requested 0), or that many configurations filled.
cudnnStatus_t heuristics_results(const Descriptor& heuristics, int64_t requested, int64_t* count, void* elements) {
  const int64_t available = unsupported(*heuristics.graph).empty() ? 1 : 0;
  if (requested < 0) return fail(CUDNN_STATUS_BAD_PARAM, "ENGINEHEUR results: negative requested count");
  if (requested == 0) {
    *count = available;
    return CUDNN_STATUS_SUCCESS;
  }
  if (!elements) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "ENGINEHEUR results: null array");
  const int64_t filled = std::min(available, requested);
  for (int64_t i = 0; i < filled; ++i) {
    DescriptorPtr config;
    if (cudnnStatus_t status = lookup(static_cast<void* const*>(elements)[i], "ENGINEHEUR results", config);
        status != CUDNN_STATUS_SUCCESS ||
        (status = fill_engine_config(*config, heuristics.graph)) != CUDNN_STATUS_SUCCESS)
      return status;
  }
  *count = filled;
  return CUDNN_STATUS_SUCCESS;
}

// The pack's pointers by tensor id, then the graph run on them (kernels/emu/cudnn_emu_execute.cpp).
// Set by the program that loads this library (mcdl_cudnn_emu_set_stream_queue): queues work on a
// stream, recording it while the stream is being captured (the program's emulated runtime knows
// that; this library has its own copy of it). Unset, work runs at once.
using StreamQueue = bool (*)(cudaStream_t, std::function<void()>);
StreamQueue stream_queue = nullptr;

// Checks the pack now and runs the graph on the handle's stream. By-value scalars are read now, as
// cuDNN reads them when it is called, so a recorded execution keeps their values.
cudnnStatus_t execute(cudaStream_t stream, std::shared_ptr<const GraphInfo> graph, const Descriptor& pack) {
  std::map<int64_t, void*> given;
  const Attribute* uids = attribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attribute* pointers = attribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  if (uids && pointers)  // as many of each: the pack's finalize checked
    for (size_t i = 0; i < uids->integers.size(); ++i) given[uids->integers[i]] = pointers->pointers[i];
  if (const cudnnStatus_t status = execute_graph(*graph, given, false); status != CUDNN_STATUS_SUCCESS) return status;
  auto values = std::make_shared<std::map<int64_t, std::vector<unsigned char>>>();
  for (auto& [uid, pointer] : given) {
    const TensorInfo& t = graph->tensors.at(uid);
    if (!t.by_value) continue;
    const auto* bytes = static_cast<const unsigned char*>(pointer);
    std::vector<unsigned char>& held = (*values)[uid];
    held.assign(bytes, bytes + tensor_bytes(t));
    pointer = held.data();
  }
  auto run = [graph, given, values] {
    if (execute_graph(*graph, given) != CUDNN_STATUS_SUCCESS)  // checked above: cannot fail
      throw std::logic_error("emulated cuDNN: an execution checked when queued failed when run: " + last_error);
  };
  if (!stream_queue) {
    run();
    return CUDNN_STATUS_SUCCESS;
  }
  if (!stream_queue(stream, run))
    return fail(CUDNN_STATUS_EXECUTION_FAILED,
                "cudnnBackendExecute: work on the legacy default stream while another stream is being captured");
  return CUDNN_STATUS_SUCCESS;
}

// Runs an entry point's body; an exception (host memory running out) becomes a status, never a
// crash through the C interface.
template <class Body>
cudnnStatus_t guarded(const char* call, Body body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, std::string(call) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(CUDNN_STATUS_INTERNAL_ERROR, std::string(call) + ": " + e.what());
  }
}

}  // namespace

extern "C" {

size_t cudnnGetVersion(void) { return 91400; }  // emulates the API of cuDNN 9.14

int mcdl_cudnn_emulated() { return 1; }

// The loading program's stream queue (see execute); null: run at once.
void mcdl_cudnn_emu_set_stream_queue(StreamQueue queue) {
  stream_queue = queue;
}

int64_t mcdl_cudnn_live_objects() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return static_cast<int64_t>(r.descriptors.size() + r.handles.size());
}

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
    case CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING:
      return "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED:
      return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER: return "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER";
  }
  return "CUDNN_UNKNOWN_STATUS";  // the real library's answer
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
  return guarded("cudnnCreate", [&] {
    auto context = std::make_unique<cudnnContext>();
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    r.handles.insert(context.get());
    *handle = context.release();
    return CUDNN_STATUS_SUCCESS;
  });
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (const cudnnStatus_t status = check_handle(handle, "cudnnDestroy"); status != CUDNN_STATUS_SUCCESS) return status;
  {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    r.handles.erase(handle);
  }
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (const cudnnStatus_t status = check_handle(handle, "cudnnSetStream"); status != CUDNN_STATUS_SUCCESS)
    return status;
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* descriptor) {
  if (!descriptor) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendCreateDescriptor: null pointer");
  if (!type_name(type))
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "cudnnBackendCreateDescriptor: descriptor type " + std::to_string(type) + " is not emulated");
  return guarded("cudnnBackendCreateDescriptor", [&] {
    auto d = std::make_shared<Descriptor>();
    d->type = type;
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    r.descriptors[d.get()] = d;
    *descriptor = d.get();
    return CUDNN_STATUS_SUCCESS;
  });
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  DescriptorPtr d;  // released after the lock: what it shares may be the last reference to others
  if (const cudnnStatus_t status = lookup(descriptor, "cudnnBackendDestroyDescriptor", d);
      status != CUDNN_STATUS_SUCCESS)
    return status;
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.descriptors.erase(descriptor);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t element_count, const void* elements) {
  return guarded("cudnnBackendSetAttribute", [&] {
    DescriptorPtr d;
    if (const cudnnStatus_t status = lookup(descriptor, "cudnnBackendSetAttribute", d); status != CUDNN_STATUS_SUCCESS)
      return status;
    return set_attribute(*d, name, type, element_count, elements);
  });
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  return guarded("cudnnBackendFinalize", [&] {
    DescriptorPtr d;
    if (const cudnnStatus_t status = lookup(descriptor, "cudnnBackendFinalize", d); status != CUDNN_STATUS_SUCCESS)
      return status;
    if (d->finalized) return fail(CUDNN_STATUS_BAD_PARAM, std::string(type_name(d->type)) + ": finalized twice");
    const cudnnStatus_t status = finalize(*d);
    d->finalized = status == CUDNN_STATUS_SUCCESS;
    return status;
  });
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested_element_count,
                                       int64_t* element_count, void* elements) {
  return guarded("cudnnBackendGetAttribute", [&] {
    DescriptorPtr d;
    if (const cudnnStatus_t status = lookup(descriptor, "cudnnBackendGetAttribute", d); status != CUDNN_STATUS_SUCCESS)
      return status;
    const std::string what = type_name(d->type);
    // As cuDNN 9 answers for a descriptor not finalized yet.
    if (!d->finalized) return fail(CUDNN_STATUS_NOT_INITIALIZED, what + ": read before it is finalized");
    if (!element_count) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, what + ": null element count");
    if (d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS &&
        type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
      return heuristics_results(*d, requested_element_count, element_count, elements);
    if (d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE &&
        type == CUDNN_TYPE_INT64) {
      if (requested_element_count >= 1 && !elements)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, what + ": WORKSPACE_SIZE into a null array");
      if (requested_element_count >= 1) static_cast<int64_t*>(elements)[0] = 0;
      *element_count = 1;
      return CUDNN_STATUS_SUCCESS;
    }
    return fail(CUDNN_STATUS_NOT_SUPPORTED, what + ": reading attribute " + std::to_string(name) + " as element type " +
                                                std::to_string(type) + " is not emulated");
  });
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t execution_plan,
                                  cudnnBackendDescriptor_t variant_pack) {
  return guarded("cudnnBackendExecute", [&] {
    if (const cudnnStatus_t status = check_handle(handle, "cudnnBackendExecute"); status != CUDNN_STATUS_SUCCESS)
      return status;
    DescriptorPtr plan, pack;
    if (cudnnStatus_t status = lookup(execution_plan, "cudnnBackendExecute (plan)", plan);
        status != CUDNN_STATUS_SUCCESS ||
        (status = lookup(variant_pack, "cudnnBackendExecute (pack)", pack)) != CUDNN_STATUS_SUCCESS)
      return status;
    if (plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !plan->finalized)
      return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: expected a finalized EXECUTION_PLAN, got " +
                                              std::string(plan->finalized ? "a " : "an unfinalized ") +
                                              type_name(plan->type));
    if (pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !pack->finalized)
      return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: expected a finalized VARIANT_PACK, got " +
                                              std::string(pack->finalized ? "a " : "an unfinalized ") +
                                              type_name(pack->type));
    return execute(handle->stream, plan->graph, *pack);
  });
}

}  // extern "C"
