// CPU stand-in for the cuDNN graph (backend) API entry points the project calls, for emulator
// builds. It keeps the library's contract so that the descriptor-building code at the call site
// is really exercised: descriptors are host objects holding typed attributes; SetAttribute
// checks the attribute belongs to the descriptor, its type and its element count, and that
// descriptor values are finalized; Finalize checks the required attributes and their
// consistency (tensor ranks, convolution output shape, distinct tensor ids); GetAttribute
// only reads finalized descriptors and fills caller-created descriptors; Execute finds every
// tensor of the graph in the variant pack (non-null, aligned as the tensor declared) and the
// workspace the plan asked for, then computes the forward convolution with a plain loop from
// the descriptors' dimensions, strides, convolution parameters, alpha and beta (beta = 0 never
// reads y). Enum names and values are the real header's (cudnn_graph.h, cuDNN 9).
//
// Emulated engines, in the order the heuristics return them (every heuristics mode):
//   0: "tensor cores": float data only, numerical note TENSOR_CORE; rounds its inputs to TF32.
//   1: "FMA": float or double; gathers each filter window into the workspace, then accumulates
//      in the compute type.
// Engines refuse (CUDNN_STATUS_NOT_SUPPORTED_SHAPE at plan finalization) tensors of more than
// max_tensor_elements() elements: real engines index with 32 bits; tests lower the limit to
// reach the "no engine for this shape" path.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kernels/emu/cublas_api.h"  // round_to_tf32: tensor-core engines round inputs as cuBLAS's TF32 mode
#include "kernels/emu/runtime_api.h"

enum cudnnStatus_t {
  CUDNN_STATUS_SUCCESS = 0,
  CUDNN_STATUS_NOT_INITIALIZED = 1001,
  CUDNN_STATUS_BAD_PARAM = 2000,
  CUDNN_STATUS_BAD_PARAM_NULL_POINTER = 2002,
  CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER = 2003,
  CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED = 2004,
  CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES = 2009,
  CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE = 2010,
  CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE = 2012,
  CUDNN_STATUS_NOT_SUPPORTED = 3000,
  CUDNN_STATUS_NOT_SUPPORTED_SHAPE = 3002,
  CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE = 3003,
};
enum cudnnDataType_t { CUDNN_DATA_FLOAT = 0, CUDNN_DATA_DOUBLE = 1 };
enum cudnnConvolutionMode_t { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 };
enum cudnnBackendAttributeName_t {
  CUDNN_ATTR_CONVOLUTION_COMP_TYPE = 100,
  CUDNN_ATTR_CONVOLUTION_CONV_MODE = 101,
  CUDNN_ATTR_CONVOLUTION_DILATIONS = 102,
  CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES = 103,
  CUDNN_ATTR_CONVOLUTION_POST_PADDINGS = 104,
  CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS = 105,
  CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS = 106,
  CUDNN_ATTR_ENGINEHEUR_MODE = 200,
  CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201,
  CUDNN_ATTR_ENGINEHEUR_RESULTS = 202,
  CUDNN_ATTR_ENGINEHEUR_DEVICEPROP = 204,
  CUDNN_ATTR_ENGINECFG_ENGINE = 300,
  CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401,
  CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA = 700,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA = 701,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC = 702,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W = 703,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X = 704,
  CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y = 705,
  CUDNN_ATTR_OPERATIONGRAPH_OPS = 801,
  CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900,
  CUDNN_ATTR_TENSOR_DATA_TYPE = 901,
  CUDNN_ATTR_TENSOR_DIMENSIONS = 902,
  CUDNN_ATTR_TENSOR_STRIDES = 903,
  CUDNN_ATTR_TENSOR_UNIQUE_ID = 906,
  CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000,
  CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001,
  CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003,
  CUDNN_ATTR_ENGINE_NUMERICAL_NOTE = 1303,
  CUDNN_ATTR_DEVICEPROP_DEVICE_ID = 2700,
  CUDNN_ATTR_DEVICEPROP_HANDLE = 2701,
};
enum cudnnBackendAttributeType_t {
  CUDNN_TYPE_HANDLE = 0,
  CUDNN_TYPE_DATA_TYPE = 1,
  CUDNN_TYPE_BOOLEAN = 2,
  CUDNN_TYPE_INT64 = 3,
  CUDNN_TYPE_FLOAT = 4,
  CUDNN_TYPE_DOUBLE = 5,
  CUDNN_TYPE_VOID_PTR = 6,
  CUDNN_TYPE_CONVOLUTION_MODE = 7,
  CUDNN_TYPE_HEUR_MODE = 8,
  CUDNN_TYPE_NUMERICAL_NOTE = 11,
  CUDNN_TYPE_BACKEND_DESCRIPTOR = 15,
  CUDNN_TYPE_INT32 = 23,
};
enum cudnnBackendDescriptorType_t {
  CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR = 1,
  CUDNN_BACKEND_ENGINE_DESCRIPTOR = 2,
  CUDNN_BACKEND_ENGINECFG_DESCRIPTOR = 3,
  CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR = 4,
  CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR = 5,
  CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR = 10,
  CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR = 15,
  CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR = 16,
  CUDNN_BACKEND_TENSOR_DESCRIPTOR = 17,
  CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR = 38,
};
enum cudnnBackendNumericalNote_t {
  CUDNN_NUMERICAL_NOTE_TENSOR_CORE = 0,
  CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS = 1,
  CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION = 2,
  CUDNN_NUMERICAL_NOTE_FFT = 3,
  CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC = 4,
  CUDNN_NUMERICAL_NOTE_WINOGRAD = 5,
  CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4 = 6,
  CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6 = 7,
  CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13 = 8,
  CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP = 9,
  CUDNN_NUMERICAL_NOTE_TYPE_COUNT = 10,
};
enum cudnnBackendHeurMode_t {
  CUDNN_HEUR_MODE_INSTANT = 0,
  CUDNN_HEUR_MODE_B = 1,
  CUDNN_HEUR_MODE_FALLBACK = 2,
  CUDNN_HEUR_MODE_A = 3,
};
constexpr int CUDNN_DIM_MAX = 8;

struct cudnnContext {
  cudaStream_t stream = nullptr;
};
using cudnnHandle_t = cudnnContext*;
using cudnnBackendDescriptor_t = void*;

namespace mcdl::emu {

// Element limit of the emulated engines (see the top of this file).
inline int64_t& max_tensor_elements() {
  static int64_t limit = (int64_t(1) << 31) - 1;
  return limit;
}

namespace cudnn {

struct Descriptor;
using Snapshot = std::shared_ptr<const Descriptor>;  // a finalized descriptor, copied when set as a value

struct Attribute {
  cudnnBackendAttributeType_t type;
  int64_t count = 0;
  std::vector<unsigned char> bytes;   // count elements of the attribute type (not for descriptors)
  std::vector<Snapshot> descriptors;  // CUDNN_TYPE_BACKEND_DESCRIPTOR values

  template <class V>
  V at(int64_t i) const {
    V value;
    std::memcpy(&value, bytes.data() + i * sizeof(V), sizeof(V));
    return value;
  }
  int64_t int64(int64_t i = 0) const { return at<int64_t>(i); }
  double real() const { return type == CUDNN_TYPE_FLOAT ? at<float>(0) : at<double>(0); }
  std::vector<int64_t> int64s() const {
    std::vector<int64_t> values(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = int64(i);
    return values;
  }
};

enum class EngineKind { tensor_cores = 0, fma = 1 };

struct Descriptor {
  cudnnBackendDescriptorType_t type;
  bool finalized = false;
  std::map<cudnnBackendAttributeName_t, Attribute> attributes;
  // What finalization (or cuDNN filling a caller-created descriptor) derives:
  std::vector<Snapshot> results;  // ENGINEHEUR: the engine configs
  Snapshot graph;                 // ENGINECFG, ENGINE, EXECUTION_PLAN: the operation graph
  EngineKind engine = EngineKind::fma;
  int64_t workspace_bytes = 0;  // EXECUTION_PLAN

  const Attribute& get(cudnnBackendAttributeName_t name) const { return attributes.at(name); }
  bool has(cudnnBackendAttributeName_t name) const { return attributes.count(name) != 0; }
  const Descriptor& child(cudnnBackendAttributeName_t name, size_t i = 0) const { return *get(name).descriptors.at(i); }
};

// The settable attributes: owner, name, accepted types (second = alternative), element count
// range, the descriptor type of descriptor values, and whether Finalize requires it.
struct Spec {
  cudnnBackendDescriptorType_t owner;
  cudnnBackendAttributeName_t name;
  cudnnBackendAttributeType_t type, alternative;
  int64_t min_count, max_count;
  cudnnBackendDescriptorType_t element_kind;
  bool required;
};
inline const std::vector<Spec>& specs() {
  constexpr auto tensor = CUDNN_BACKEND_TENSOR_DESCRIPTOR, conv = CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                 fwd = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                 graph = CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, heur = CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                 plan = CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, pack = CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                 device = CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, cfg = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
  constexpr auto i64 = CUDNN_TYPE_INT64, desc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  constexpr int64_t spatial_max = CUDNN_DIM_MAX - 2;
  static const std::vector<Spec> table = {
      {tensor, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, i64, i64, 1, 1, tensor, true},
      {tensor, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, 1, tensor, true},
      {tensor, CUDNN_ATTR_TENSOR_DIMENSIONS, i64, i64, 1, CUDNN_DIM_MAX, tensor, true},
      {tensor, CUDNN_ATTR_TENSOR_STRIDES, i64, i64, 1, CUDNN_DIM_MAX, tensor, true},
      {tensor, CUDNN_ATTR_TENSOR_UNIQUE_ID, i64, i64, 1, 1, tensor, true},
      {conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, 1, conv, true},
      {conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, 1, conv,
       true},
      {conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, i64, i64, 1, 1, conv, true},
      {conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, i64, i64, 1, spatial_max, conv, true},
      {conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, i64, i64, 1, spatial_max, conv, true},
      {conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, i64, i64, 1, spatial_max, conv, true},
      {conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, i64, i64, 1, spatial_max, conv, true},
      {fwd, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, CUDNN_TYPE_DOUBLE, 1, 1, fwd, true},
      {fwd, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, CUDNN_TYPE_DOUBLE, 1, 1, fwd, true},
      {fwd, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, desc, desc, 1, 1, conv, true},
      {fwd, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, desc, desc, 1, 1, tensor, true},
      {fwd, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, desc, desc, 1, 1, tensor, true},
      {fwd, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, desc, desc, 1, 1, tensor, true},
      {graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, desc, desc, 1, 64, fwd, true},
      {device, CUDNN_ATTR_DEVICEPROP_HANDLE, CUDNN_TYPE_HANDLE, CUDNN_TYPE_HANDLE, 1, 1, device, false},
      {device, CUDNN_ATTR_DEVICEPROP_DEVICE_ID, CUDNN_TYPE_INT32, CUDNN_TYPE_INT32, 1, 1, device, false},
      {heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, desc, desc, 1, 1, graph, true},
      {heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, 1, heur, true},
      {heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, desc, desc, 1, 1, device, false},
      {plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, desc, desc, 1, 1, cfg, true},
      {pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, i64, i64, 0, 64, pack, true},
      {pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, CUDNN_TYPE_VOID_PTR, 0, 64, pack, true},
      {pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, CUDNN_TYPE_VOID_PTR, 1, 1, pack, true},
  };
  return table;
}

inline size_t element_size(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE: return sizeof(cudnnHandle_t);
    case CUDNN_TYPE_DATA_TYPE: return sizeof(cudnnDataType_t);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_INT64: return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT: return sizeof(float);
    case CUDNN_TYPE_DOUBLE: return sizeof(double);
    case CUDNN_TYPE_VOID_PTR: return sizeof(void*);
    case CUDNN_TYPE_CONVOLUTION_MODE: return sizeof(cudnnConvolutionMode_t);
    case CUDNN_TYPE_HEUR_MODE: return sizeof(cudnnBackendHeurMode_t);
    case CUDNN_TYPE_NUMERICAL_NOTE: return sizeof(cudnnBackendNumericalNote_t);
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(cudnnBackendDescriptor_t);
    case CUDNN_TYPE_INT32: return sizeof(int32_t);
  }
  return 0;
}

// Live descriptors and handles, so that a destroyed or foreign pointer is refused, and the
// message of the last failure (cudnnGetLastErrorString).
struct State {
  std::mutex mutex;
  std::set<const void*> descriptors, handles;
};
inline State& state() {
  static State* instance = new State();  // never destroyed: descriptors may outlive static destructors
  return *instance;
}
inline std::string& last_error() {
  thread_local std::string message;
  return message;
}
inline cudnnStatus_t fail(cudnnStatus_t status, const std::string& message) {
  last_error() = message;
  return status;
}
inline Descriptor* live(cudnnBackendDescriptor_t pointer) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.descriptors.count(pointer) ? static_cast<Descriptor*>(pointer) : nullptr;
}
inline bool live_handle(cudnnHandle_t handle) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.handles.count(handle) != 0;
}
// Makes `object` live in `set` (State::handles or State::descriptors), counted as `kind`.
template <class T>
T* add_live(std::set<const void*> State::*set, T* object, const char* kind) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  (s.*set).insert(object);
  count_object(kind, 1);
  return object;
}
// Deletes a live T of `set`; false (nothing done) when `object` is not live there.
template <class T>
bool remove_live(std::set<const void*> State::*set, const void* object, const char* kind) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if ((s.*set).erase(object) == 0) return false;
  delete static_cast<const T*>(object);
  count_object(kind, -1);
  return true;
}

inline int64_t numel(const Descriptor& tensor) {
  int64_t n = 1;
  for (int64_t d : tensor.get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s()) n *= d;
  return n;
}
inline cudnnDataType_t data_type(const Descriptor& tensor) {
  return tensor.get(CUDNN_ATTR_TENSOR_DATA_TYPE).at<cudnnDataType_t>(0);
}
inline bool known_data_type(cudnnDataType_t type) { return type == CUDNN_DATA_FLOAT || type == CUDNN_DATA_DOUBLE; }

inline cudnnStatus_t finalize_tensor(const Descriptor& d) {
  const auto dims = d.get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s(), strides = d.get(CUDNN_ATTR_TENSOR_STRIDES).int64s();
  if (dims.size() != strides.size())
    return fail(CUDNN_STATUS_BAD_PARAM, "tensor: DIMENSIONS and STRIDES have different lengths");
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 1 || strides[i] < 1)
      return fail(CUDNN_STATUS_BAD_PARAM, "tensor: dimensions and strides must be >= 1");
  const int64_t alignment = d.get(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT).int64();
  if (alignment < 1 || (alignment & (alignment - 1)) != 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "tensor: BYTE_ALIGNMENT must be a power of two");
  if (!known_data_type(data_type(d)))
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "tensor: data type not emulated");
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t finalize_convolution(const Descriptor& d) {
  const int64_t spatial = d.get(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS).int64();
  for (auto name : {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                    CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS}) {
    const auto values = d.get(name).int64s();
    if (static_cast<int64_t>(values.size()) != spatial)
      return fail(CUDNN_STATUS_BAD_PARAM, "convolution: " + std::to_string(values.size()) +
                                              " values for SPATIAL_DIMS = " + std::to_string(spatial));
    const bool padding = name == CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS || name == CUDNN_ATTR_CONVOLUTION_POST_PADDINGS;
    for (int64_t v : values)
      if (v < (padding ? 0 : 1))
        return fail(CUDNN_STATUS_BAD_PARAM, "convolution: negative padding or stride/dilation < 1");
  }
  const auto mode = d.get(CUDNN_ATTR_CONVOLUTION_CONV_MODE).at<cudnnConvolutionMode_t>(0);
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
    return fail(CUDNN_STATUS_BAD_PARAM, "convolution: unknown CONV_MODE");
  if (!known_data_type(d.get(CUDNN_ATTR_CONVOLUTION_COMP_TYPE).at<cudnnDataType_t>(0)))
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "convolution: compute type not emulated");
  return CUDNN_STATUS_SUCCESS;
}

// y = conv(x, w): ranks spatial + 2, groups of 1, and the output size the parameters imply.
inline cudnnStatus_t finalize_convolution_forward(const Descriptor& d) {
  const Descriptor& conv = d.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC);
  const auto x = d.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X).get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s();
  const auto w = d.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W).get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s();
  const auto y = d.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y).get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s();
  const size_t rank = static_cast<size_t>(conv.get(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS).int64()) + 2;
  if (x.size() != rank || w.size() != rank || y.size() != rank)
    return fail(CUDNN_STATUS_BAD_PARAM, "convolution forward: x, w and y must have SPATIAL_DIMS + 2 dimensions");
  if (x[1] != w[1]) return fail(CUDNN_STATUS_BAD_PARAM, "convolution forward: x and w have different channel counts");
  if (y[0] != x[0] || y[1] != w[0])
    return fail(CUDNN_STATUS_BAD_PARAM, "convolution forward: y must be [x batch, w output channels, ...]");
  const auto stride = conv.get(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES).int64s(),
             dilation = conv.get(CUDNN_ATTR_CONVOLUTION_DILATIONS).int64s(),
             pre = conv.get(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS).int64s(),
             post = conv.get(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS).int64s();
  for (size_t i = 2; i < rank; ++i) {
    const size_t s = i - 2;
    const int64_t extent = x[i] + pre[s] + post[s] - ((w[i] - 1) * dilation[s] + 1);
    if (extent < 0 || y[i] != extent / stride[s] + 1)
      return fail(CUDNN_STATUS_BAD_PARAM, "convolution forward: y's spatial size " + std::to_string(y[i]) +
                                              " does not follow from x, w and the convolution parameters");
  }
  return CUDNN_STATUS_SUCCESS;
}

inline bool same_tensor(const Descriptor& a, const Descriptor& b) {
  for (auto name : {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_ATTR_TENSOR_STRIDES,
                    CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT})
    if (a.get(name).bytes != b.get(name).bytes) return false;
  return true;
}

// Distinct tensors of the graph must have distinct unique ids.
inline cudnnStatus_t finalize_graph(const Descriptor& d) {
  std::map<int64_t, const Descriptor*> seen;
  for (const Snapshot& op : d.get(CUDNN_ATTR_OPERATIONGRAPH_OPS).descriptors)
    for (auto name : {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y}) {
      const Descriptor& tensor = op->child(name);
      const int64_t uid = tensor.get(CUDNN_ATTR_TENSOR_UNIQUE_ID).int64();
      const auto [it, inserted] = seen.emplace(uid, &tensor);
      if (!inserted && !same_tensor(*it->second, tensor))
        return fail(CUDNN_STATUS_BAD_PARAM, "operation graph: two tensors share UNIQUE_ID " + std::to_string(uid));
    }
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t finalize_device(const Descriptor& d) {
  if (d.has(CUDNN_ATTR_DEVICEPROP_HANDLE)) {
    if (!live_handle(d.get(CUDNN_ATTR_DEVICEPROP_HANDLE).at<cudnnHandle_t>(0)))
      return fail(CUDNN_STATUS_BAD_PARAM, "device properties: HANDLE is not a live cuDNN handle");
  } else if (d.has(CUDNN_ATTR_DEVICEPROP_DEVICE_ID)) {
    const int32_t id = d.get(CUDNN_ATTR_DEVICEPROP_DEVICE_ID).at<int32_t>(0);
    if (id < 0 || id >= emulated_device_count())
      return fail(CUDNN_STATUS_BAD_PARAM, "device properties: DEVICE_ID is not a device");
  } else {
    return fail(CUDNN_STATUS_BAD_PARAM, "device properties: neither HANDLE nor DEVICE_ID is set");
  }
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t finalize_heuristics(Descriptor& d) {
  const auto mode = d.get(CUDNN_ATTR_ENGINEHEUR_MODE).at<cudnnBackendHeurMode_t>(0);
  if (mode != CUDNN_HEUR_MODE_INSTANT && mode != CUDNN_HEUR_MODE_A && mode != CUDNN_HEUR_MODE_B &&
      mode != CUDNN_HEUR_MODE_FALLBACK)
    return fail(CUDNN_STATUS_BAD_PARAM, "engine heuristics: unknown MODE");
  for (EngineKind kind : {EngineKind::tensor_cores, EngineKind::fma}) {
    auto config = std::make_shared<Descriptor>();
    config->type = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
    config->finalized = true;
    config->graph = d.get(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH).descriptors[0];
    config->engine = kind;
    d.results.push_back(config);
  }
  return CUDNN_STATUS_SUCCESS;
}

// Whether the config's engine runs the graph (data types, rank, size), and its workspace.
inline cudnnStatus_t finalize_plan(Descriptor& d) {
  const Descriptor& config = d.child(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  d.graph = config.graph;
  d.engine = config.engine;
  const Descriptor& op = d.graph->child(CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (d.graph->get(CUDNN_ATTR_OPERATIONGRAPH_OPS).count != 1)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "execution plan: the emulated engines run one convolution");
  const Descriptor &x = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X),
                   &w = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W),
                   &y = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y),
                   &conv = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC);
  const cudnnDataType_t type = data_type(x);
  if (data_type(w) != type || data_type(y) != type ||
      conv.get(CUDNN_ATTR_CONVOLUTION_COMP_TYPE).at<cudnnDataType_t>(0) != type)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "execution plan: x, w, y and the compute type must agree");
  if (d.engine == EngineKind::tensor_cores && type != CUDNN_DATA_FLOAT)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "execution plan: the tensor-core engine takes float data");
  if (conv.get(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS).int64() != 2)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "execution plan: the emulated engines run 2-d convolutions");
  for (const Descriptor* t : {&x, &w, &y})
    if (numel(*t) > max_tensor_elements())
      return fail(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "execution plan: a tensor is too large for the engine");
  const auto wd = w.get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s();
  const int64_t window = wd[1] * wd[2] * wd[3];
  d.workspace_bytes = d.engine == EngineKind::fma ? window * (type == CUDNN_DATA_FLOAT ? 4 : 8) : 0;
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t finalize_variant_pack(const Descriptor& d) {
  const auto ids = d.get(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS).int64s();
  if (static_cast<int64_t>(ids.size()) != d.get(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS).count)
    return fail(CUDNN_STATUS_BAD_PARAM, "variant pack: UNIQUE_IDS and DATA_POINTERS have different lengths");
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t j = i + 1; j < ids.size(); ++j)
      if (ids[i] == ids[j]) return fail(CUDNN_STATUS_BAD_PARAM, "variant pack: repeated unique id");
  return CUDNN_STATUS_SUCCESS;
}

// The convolution itself: y = alpha·conv(x, w) + beta·y over 2 spatial dimensions, each filter
// window gathered into `window` (the workspace, or local storage for the tensor-core engine).
template <class T>
void convolve(const Descriptor& op, const T* x, const T* w, T* y, T* window, bool tf32) {
  const Descriptor &xd = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X),
                   &wd = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W),
                   &yd = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y),
                   &conv = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC);
  const auto xs = xd.get(CUDNN_ATTR_TENSOR_STRIDES).int64s(), ws = wd.get(CUDNN_ATTR_TENSOR_STRIDES).int64s(),
             ys = yd.get(CUDNN_ATTR_TENSOR_STRIDES).int64s(), xdim = xd.get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s(),
             wdim = wd.get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s(), ydim = yd.get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s();
  const auto stride = conv.get(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES).int64s(),
             dilation = conv.get(CUDNN_ATTR_CONVOLUTION_DILATIONS).int64s(),
             pad = conv.get(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS).int64s();
  const bool flip = conv.get(CUDNN_ATTR_CONVOLUTION_CONV_MODE).at<cudnnConvolutionMode_t>(0) == CUDNN_CONVOLUTION;
  const T alpha = static_cast<T>(op.get(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA).real()),
          beta = static_cast<T>(op.get(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA).real());
  const int64_t channels = wdim[1], kh = wdim[2], kw = wdim[3];
  auto input = [&](T v) { return tf32 ? static_cast<T>(detail::round_to_tf32(static_cast<float>(v))) : v; };
  for (int64_t n = 0; n < ydim[0]; ++n)
    for (int64_t k = 0; k < ydim[1]; ++k)
      for (int64_t oh = 0; oh < ydim[2]; ++oh)
        for (int64_t ow = 0; ow < ydim[3]; ++ow) {
          T* gathered = window;
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t r = 0; r < kh; ++r)
              for (int64_t s = 0; s < kw; ++s) {
                const int64_t ih = oh * stride[0] - pad[0] + r * dilation[0],
                              iw = ow * stride[1] - pad[1] + s * dilation[1];
                const bool inside = ih >= 0 && ih < xdim[2] && iw >= 0 && iw < xdim[3];
                *gathered++ = inside ? x[n * xs[0] + c * xs[1] + ih * xs[2] + iw * xs[3]] : T(0);
              }
          T sum = 0;  // accumulated in the compute type (float for float data)
          gathered = window;
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t r = 0; r < kh; ++r)
              for (int64_t s = 0; s < kw; ++s) {
                const int64_t fr = flip ? kh - 1 - r : r, fs = flip ? kw - 1 - s : s;
                sum += input(*gathered++) * input(w[k * ws[0] + c * ws[1] + fr * ws[2] + fs * ws[3]]);
              }
          T& out = y[n * ys[0] + k * ys[1] + oh * ys[2] + ow * ys[3]];
          out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;  // beta = 0 never reads y
        }
}

}  // namespace cudnn
}  // namespace mcdl::emu

inline const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES: return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE: return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
  }
  return "CUDNN_STATUS_UNKNOWN";
}

inline void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (max_size == 0) return;
  const std::string& last = mcdl::emu::cudnn::last_error();
  const size_t n = std::min(last.size(), max_size - 1);
  std::memcpy(message, last.data(), n);
  message[n] = '\0';
}

inline cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  using namespace mcdl::emu::cudnn;
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: null handle pointer");
  if (mcdl::emu::emulated_device_count() == 0) return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate: no device");
  *handle = add_live(&State::handles, new cudnnContext(), "cudnn handles");
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  using namespace mcdl::emu::cudnn;
  if (!remove_live<cudnnContext>(&State::handles, handle, "cudnn handles"))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy: not a live handle");
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  using namespace mcdl::emu::cudnn;
  if (!live_handle(handle)) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: not a live handle");
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                                  cudnnBackendDescriptor_t* descriptor) {
  using namespace mcdl::emu::cudnn;
  if (!descriptor) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendCreateDescriptor: null pointer");
  switch (type) {
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    case CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR: break;
    default: return fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendCreateDescriptor: descriptor type not emulated");
  }
  auto* created = new Descriptor();
  created->type = type;
  *descriptor = add_live(&State::descriptors, created, "cudnn descriptors");
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  using namespace mcdl::emu::cudnn;
  if (!remove_live<Descriptor>(&State::descriptors, descriptor, "cudnn descriptors"))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendDestroyDescriptor: not a live descriptor");
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                                              cudnnBackendAttributeType_t type, int64_t count, const void* elements) {
  using namespace mcdl::emu::cudnn;
  Descriptor* d = live(descriptor);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute: not a live descriptor");
  if (d->finalized) return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnBackendSetAttribute: descriptor already finalized");
  const std::string what = "cudnnBackendSetAttribute(attribute " + std::to_string(name) + "): ";
  const auto& table = specs();
  const auto spec =
      std::find_if(table.begin(), table.end(), [&](const Spec& s) { return s.owner == d->type && s.name == name; });
  if (spec == table.end()) return fail(CUDNN_STATUS_BAD_PARAM, what + "not an attribute of this descriptor");
  if (type != spec->type && type != spec->alternative)
    return fail(CUDNN_STATUS_BAD_PARAM, what + "wrong attribute type " + std::to_string(type));
  if (count < spec->min_count || count > spec->max_count)
    return fail(CUDNN_STATUS_BAD_PARAM, what + "wrong element count " + std::to_string(count));
  if (count > 0 && !elements) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, what + "null elements");
  Attribute attribute{type, count, {}, {}};
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    for (int64_t i = 0; i < count; ++i) {
      const Descriptor* value = live(static_cast<const cudnnBackendDescriptor_t*>(elements)[i]);
      if (!value) return fail(CUDNN_STATUS_BAD_PARAM, what + "element is not a live descriptor");
      if (value->type != spec->element_kind)
        return fail(CUDNN_STATUS_BAD_PARAM, what + "element is the wrong kind of descriptor");
      if (!value->finalized) return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, what + "element is not finalized");
      attribute.descriptors.push_back(std::make_shared<const Descriptor>(*value));
    }
  } else {
    const auto* bytes = static_cast<const unsigned char*>(elements);
    attribute.bytes.assign(bytes, bytes + count * element_size(type));
  }
  d->attributes[name] = std::move(attribute);
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  using namespace mcdl::emu::cudnn;
  Descriptor* d = live(descriptor);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: not a live descriptor");
  if (d->finalized) return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnBackendFinalize: already finalized");
  for (const Spec& spec : specs())
    if (spec.owner == d->type && spec.required && !d->has(spec.name))
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "cudnnBackendFinalize: required attribute " + std::to_string(spec.name) + " is not set");
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: status = finalize_tensor(*d); break;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: status = finalize_convolution(*d); break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: status = finalize_convolution_forward(*d); break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: status = finalize_graph(*d); break;
    case CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR: status = finalize_device(*d); break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: status = finalize_heuristics(*d); break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: status = finalize_plan(*d); break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: status = finalize_variant_pack(*d); break;
    default:  // engines and engine configs come from the heuristics, finalized by GetAttribute
      return fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendFinalize: building engine configs by hand is not emulated");
  }
  if (status == CUDNN_STATUS_SUCCESS) d->finalized = true;
  return status;
}

// Reads a set attribute, or what finalization derived (heuristics results, an engine config's
// engine, an engine's numerical notes, a plan's workspace size). Writes min(requested,
// available) elements and reports the available count.
inline cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                              cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                              int64_t requested, int64_t* count, void* elements) {
  using namespace mcdl::emu::cudnn;
  const Descriptor* d = live(descriptor);
  const std::string what = "cudnnBackendGetAttribute(attribute " + std::to_string(name) + "): ";
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, what + "not a live descriptor");
  if (!d->finalized) return fail(CUDNN_STATUS_NOT_INITIALIZED, what + "descriptor not finalized");
  if (!count || requested < 0 || (requested > 0 && !elements))
    return fail(CUDNN_STATUS_BAD_PARAM, what + "bad count or element pointers");
  auto expect = [&](cudnnBackendDescriptorType_t owner, cudnnBackendAttributeType_t wanted) {
    return d->type == owner && type == wanted;
  };
  // Fills caller-created descriptors of kind `kind` with copies of `values`.
  auto fill = [&](const std::vector<Descriptor>& values, cudnnBackendDescriptorType_t kind) {
    *count = static_cast<int64_t>(values.size());
    for (int64_t i = 0; i < std::min(requested, *count); ++i) {
      Descriptor* out = live(static_cast<cudnnBackendDescriptor_t*>(elements)[i]);
      if (!out || out->type != kind)
        return fail(CUDNN_STATUS_BAD_PARAM, what + "output element is not a live descriptor of the right kind");
      *out = values[static_cast<size_t>(i)];
      out->finalized = true;
    }
    return CUDNN_STATUS_SUCCESS;
  };
  if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS &&
      expect(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR)) {
    std::vector<Descriptor> configs;
    for (const Snapshot& config : d->results) configs.push_back(*config);
    return fill(configs, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  }
  if (name == CUDNN_ATTR_ENGINECFG_ENGINE &&
      expect(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR)) {
    Descriptor engine = *d;
    engine.type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
    return fill({engine}, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  }
  if (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE && expect(CUDNN_BACKEND_ENGINE_DESCRIPTOR, CUDNN_TYPE_NUMERICAL_NOTE)) {
    std::vector<cudnnBackendNumericalNote_t> notes;
    if (d->engine == EngineKind::tensor_cores) notes.push_back(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    *count = static_cast<int64_t>(notes.size());
    std::copy_n(notes.begin(), std::min(requested, *count), static_cast<cudnnBackendNumericalNote_t*>(elements));
    return CUDNN_STATUS_SUCCESS;
  }
  if (name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE &&
      expect(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_TYPE_INT64)) {
    *count = 1;
    if (requested > 0) *static_cast<int64_t*>(elements) = d->workspace_bytes;
    return CUDNN_STATUS_SUCCESS;
  }
  const auto found = d->attributes.find(name);
  if (found == d->attributes.end()) return fail(CUDNN_STATUS_BAD_PARAM, what + "attribute not set or not emulated");
  const Attribute& a = found->second;
  if (a.type != type) return fail(CUDNN_STATUS_BAD_PARAM, what + "wrong attribute type");
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    std::vector<Descriptor> values;
    for (const Snapshot& value : a.descriptors) values.push_back(*value);
    return fill(values, values.empty() ? d->type : values[0].type);
  }
  *count = a.count;
  std::memcpy(elements, a.bytes.data(), static_cast<size_t>(std::min(requested, a.count)) * element_size(type));
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan_descriptor,
                                         cudnnBackendDescriptor_t pack_descriptor) {
  using namespace mcdl::emu::cudnn;
  if (!live_handle(handle)) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: not a live handle");
  const Descriptor *plan = live(plan_descriptor), *pack = live(pack_descriptor);
  if (!plan || plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !pack ||
      pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: expected a live execution plan and variant pack");
  if (!plan->finalized || !pack->finalized)
    return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "cudnnBackendExecute: plan or variant pack not finalized");
  const Attribute &ids = pack->get(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS),
                  &pointers = pack->get(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  const Descriptor& op = plan->graph->child(CUDNN_ATTR_OPERATIONGRAPH_OPS);
  // The device pointer of a graph tensor, checked against the tensor's declared alignment.
  auto data = [&](cudnnBackendAttributeName_t which, void** out) {
    const Descriptor& tensor = op.child(which);
    const int64_t uid = tensor.get(CUDNN_ATTR_TENSOR_UNIQUE_ID).int64();
    for (int64_t i = 0; i < ids.count; ++i) {
      if (ids.int64(i) != uid) continue;
      *out = pointers.at<void*>(i);
      if (!*out) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendExecute: null pointer for a tensor");
      if (reinterpret_cast<uintptr_t>(*out) %
          static_cast<uintptr_t>(tensor.get(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT).int64()))
        return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                    "cudnnBackendExecute: pointer of tensor " + std::to_string(uid) + " breaks its BYTE_ALIGNMENT");
      return CUDNN_STATUS_SUCCESS;
    }
    return fail(CUDNN_STATUS_BAD_PARAM,
                "cudnnBackendExecute: tensor " + std::to_string(uid) + " is not in the variant pack");
  };
  void *x = nullptr, *w = nullptr, *y = nullptr;
  for (auto [which, out] : {std::pair{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, &x},
                            std::pair{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, &w},
                            std::pair{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, &y}})
    if (const cudnnStatus_t status = data(which, out); status != CUDNN_STATUS_SUCCESS) return status;
  void* workspace = pack->get(CUDNN_ATTR_VARIANT_PACK_WORKSPACE).at<void*>(0);
  if (plan->workspace_bytes > 0 && !workspace)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendExecute: the plan needs a workspace");
  const auto wdim = op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W).get(CUDNN_ATTR_TENSOR_DIMENSIONS).int64s();
  const size_t window = static_cast<size_t>(wdim[1] * wdim[2] * wdim[3]);
  const bool tensor_cores = plan->engine == EngineKind::tensor_cores;
  if (data_type(op.child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X)) == CUDNN_DATA_FLOAT) {
    std::vector<float> local(tensor_cores ? window : 0);
    convolve(op, static_cast<const float*>(x), static_cast<const float*>(w), static_cast<float*>(y),
             tensor_cores ? local.data() : static_cast<float*>(workspace), tensor_cores);
  } else {
    convolve(op, static_cast<const double*>(x), static_cast<const double*>(w), static_cast<double*>(y),
             static_cast<double*>(workspace), false);
  }
  return CUDNN_STATUS_SUCCESS;
}
