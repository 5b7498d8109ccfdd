#include "kernels/cuda/conv_cudnn.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/device_resource.h"
#include "kernels/cuda/runtime.h"

#ifdef __CUDACC__
// Makes deprecated cuDNN entry points and attributes (the legacy cudnnConvolution* calls, the
// graph's and the plan's HANDLE attributes) warnings, which the -Werror build rejects.
#define CUDNN_WARN_DEPRECATED
#include <cudnn_graph.h>
#else
#include "kernels/emu/cudnn_api.h"
#endif

namespace mcdl::cuda {
namespace {

[[noreturn]] void throw_cudnn_error(const char* call, const char* file, int line, cudnnStatus_t status) {
  char detail[512];
  cudnnGetLastErrorString(detail, sizeof detail);
  throw_cuda_error(call, file, line,
                   std::string(cudnnGetErrorString(status)) + (detail[0] ? std::string(": ") + detail : ""));
}

}  // namespace
}  // namespace mcdl::cuda

// Checks a cuDNN call; throws with the call, file, line and cuDNN's error string.
#define MCDL_CUDNN_CHECK(call)                                                  \
  do {                                                                          \
    const cudnnStatus_t mcdl_status_ = (call);                                  \
    if (mcdl_status_ != CUDNN_STATUS_SUCCESS)                                   \
      ::mcdl::cuda::throw_cudnn_error(#call, __FILE__, __LINE__, mcdl_status_); \
  } while (0)

namespace mcdl::cuda {
namespace {

// The status family cuDNN reports for a graph or configuration it cannot run (3000-3999).
bool unsupported(cudnnStatus_t status) {
  return static_cast<int>(status) / 1000 == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED) / 1000;
}

// Owns one backend descriptor.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) {
    MCDL_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &raw_));
  }
  Descriptor(Descriptor&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor& operator=(Descriptor&&) = delete;
  ~Descriptor() {
    if (raw_) (void)cudnnBackendDestroyDescriptor(raw_);  // nothing useful to do if it fails here
  }
  cudnnBackendDescriptor_t get() const { return raw_; }
  // The attribute value that refers to this descriptor (CUDNN_TYPE_BACKEND_DESCRIPTOR).
  const cudnnBackendDescriptor_t* address() const { return &raw_; }

 private:
  cudnnBackendDescriptor_t raw_ = nullptr;
};

// The unique ids of the graph's tensors in the variant pack.
constexpr int64_t x_uid = 1, w_uid = 2, y_uid = 3;

// A fully packed NCHW tensor whose pointers are `alignment`-byte aligned.
Descriptor nchw_tensor(int64_t uid, cudnnDataType_t type, const std::array<int64_t, 4>& dims, int64_t alignment) {
  const std::array<int64_t, 4> strides = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  Descriptor tensor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  MCDL_CUDNN_CHECK(
      cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()));
  MCDL_CUDNN_CHECK(
      cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data()));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  MCDL_CUDNN_CHECK(
      cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
  MCDL_CUDNN_CHECK(cudnnBackendFinalize(tensor.get()));
  return tensor;
}

// Kernel = stride = P, no padding, dilation 1; cross-correlation as PyTorch's conv2d (no flip).
Descriptor patch_convolution(cudnnDataType_t compute, int64_t patch) {
  const int64_t spatial_dims = 2;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::array<int64_t, 2> strides = {patch, patch}, dilations = {1, 1}, paddings = {0, 0};
  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  MCDL_CUDNN_CHECK(
      cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  MCDL_CUDNN_CHECK(
      cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  MCDL_CUDNN_CHECK(
      cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial_dims));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64,
                                            spatial_dims, strides.data()));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64,
                                            spatial_dims, dilations.data()));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64,
                                            spatial_dims, paddings.data()));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
                                            spatial_dims, paddings.data()));
  MCDL_CUDNN_CHECK(cudnnBackendFinalize(conv.get()));
  return conv;
}

// y = 1·conv(x, w) + 0·y: beta = 0, so y is only written. alpha and beta in the compute type.
template <class Scalar>
Descriptor forward_operation(const Descriptor& x, const Descriptor& w, const Descriptor& y, const Descriptor& conv,
                             cudnnBackendAttributeType_t scalar_type) {
  const Scalar alpha = 1, beta = 0;
  Descriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, x.address()));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, w.address()));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, y.address()));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, conv.address()));
  MCDL_CUDNN_CHECK(
      cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, scalar_type, 1, &alpha));
  MCDL_CUDNN_CHECK(
      cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, scalar_type, 1, &beta));
  MCDL_CUDNN_CHECK(cudnnBackendFinalize(op.get()));
  return op;
}

// Whether the config's engine keeps the engine's numerics: never down-converted inputs, reduced-
// precision reductions or non-deterministic results; tensor cores (TF32 for float data) only
// when allowed.
bool acceptable_numerics(cudnnBackendDescriptor_t config, bool allow_tensor_cores) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t engine_raw = engine.get();
  int64_t count = 0;
  MCDL_CUDNN_CHECK(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                            &count, &engine_raw));
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  MCDL_CUDNN_CHECK(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                            static_cast<int64_t>(notes.size()), &count, notes.data()));
  for (int64_t i = 0; i < std::min<int64_t>(count, static_cast<int64_t>(notes.size())); ++i) {
    const cudnnBackendNumericalNote_t note = notes[static_cast<size_t>(i)];
    if (note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS || note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ||
        note == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC ||
        (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && !allow_tensor_cores))
      return false;
  }
  return true;
}

struct Plan {
  std::vector<Descriptor> sources;  // the graph, heuristics and configs it came from, kept alive with it
  Descriptor plan;
  int64_t workspace_bytes = 0;
};

// The cuDNN state of the process: made on first use, released by release_device().
struct Context {
  cudnnHandle_t handle = nullptr;
  // The handle's device for the heuristics. (The graph's and the plan's HANDLE attributes are
  // deprecated since cuDNN 9.8; the plan gets the handle at execution.)
  cudnnBackendDescriptor_t device = nullptr;
  std::mutex mutex;  // guards plans
  // Per (data type, tensor cores allowed, pointer alignment, B, C, H, W, P, O); nullopt: no engine.
  std::map<std::array<int64_t, 9>, std::optional<Plan>> plans;
};

void create_context(Context& c) {
  const cudaStream_t stream = engine_stream();  // initialises the device first
  MCDL_CUDNN_CHECK(cudnnCreate(&c.handle));
  MCDL_CUDNN_CHECK(cudnnSetStream(c.handle, stream));
  MCDL_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &c.device));
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(c.device, CUDNN_ATTR_DEVICEPROP_HANDLE, CUDNN_TYPE_HANDLE, 1, &c.handle));
  MCDL_CUDNN_CHECK(cudnnBackendFinalize(c.device));
}

// The plans and the device descriptor refer to the handle: they go first.
void destroy_context(Context& c) {
  c.plans.clear();
  if (c.device) (void)cudnnBackendDestroyDescriptor(c.device);
  if (!c.handle) return;
  const cudnnStatus_t status = cudnnDestroy(c.handle);
  if (status != CUDNN_STATUS_SUCCESS) report_release_failure("the cuDNN handle", cudnnGetErrorString(status));
}

DeviceResource<Context> context_resource(create_context, destroy_context);

Context& context() { return context_resource.get(); }

// Heuristics A, then B, then the fallback list; in each, the first config with acceptable
// numerics whose execution plan finalizes. nullopt when none does.
std::optional<Plan> build_plan(cudnnDataType_t type, bool allow_tensor_cores, int64_t alignment, const PatchGrid& g,
                               int64_t out_channels) {
  std::vector<Descriptor> sources;
  sources.push_back(nchw_tensor(x_uid, type, {g.batch, g.channels, g.height, g.width}, alignment));
  sources.push_back(nchw_tensor(w_uid, type, {out_channels, g.channels, g.patch, g.patch}, alignment));
  sources.push_back(nchw_tensor(y_uid, type, {g.batch, out_channels, g.rows(), g.cols()}, alignment));
  sources.push_back(patch_convolution(type, g.patch));
  sources.push_back(type == CUDNN_DATA_DOUBLE
                        ? forward_operation<double>(sources[0], sources[1], sources[2], sources[3], CUDNN_TYPE_DOUBLE)
                        : forward_operation<float>(sources[0], sources[1], sources[2], sources[3], CUDNN_TYPE_FLOAT));
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                            1, sources.back().address()));
  MCDL_CUDNN_CHECK(cudnnBackendFinalize(graph.get()));
  sources.push_back(std::move(graph));
  const cudnnBackendDescriptor_t graph_raw = sources.back().get();

  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK}) {
    Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_raw));
    MCDL_CUDNN_CHECK(
        cudnnBackendSetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_DEVICEPROP,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &context().device));
    const cudnnStatus_t heuristics_status = cudnnBackendFinalize(heuristics.get());
    if (unsupported(heuristics_status)) continue;  // this mode has nothing for the graph
    if (heuristics_status != CUDNN_STATUS_SUCCESS)
      throw_cudnn_error("cudnnBackendFinalize(heuristics)", __FILE__, __LINE__, heuristics_status);

    int64_t available = 0;
    MCDL_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr));
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> configs_raw;
    for (int64_t i = 0; i < available; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      configs_raw.push_back(configs.back().get());
    }
    MCDL_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &available,
                                              configs_raw.data()));
    for (const cudnnBackendDescriptor_t config : configs_raw) {
      if (!acceptable_numerics(config, allow_tensor_cores)) continue;
      Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config));
      const cudnnStatus_t plan_status = cudnnBackendFinalize(plan.get());
      if (unsupported(plan_status)) continue;  // this engine cannot run the shape: try the next
      if (plan_status != CUDNN_STATUS_SUCCESS)
        throw_cudnn_error("cudnnBackendFinalize(execution plan)", __FILE__, __LINE__, plan_status);
      int64_t workspace_bytes = 0, count = 0;
      MCDL_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                                1, &count, &workspace_bytes));
      sources.push_back(std::move(heuristics));
      for (Descriptor& c : configs) sources.push_back(std::move(c));
      return Plan{std::move(sources), std::move(plan), workspace_bytes};
    }
  }
  return std::nullopt;
}

// The largest power of two up to 16 that divides every address.
int64_t common_alignment(std::initializer_list<const void*> pointers) {
  int64_t alignment = 16;
  for (const void* p : pointers)
    while (reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

template <class T>
bool run_forward(const T* x, const T* w, T* y, const PatchGrid& g, int64_t out_channels, bool allow_tensor_cores) {
  const cudnnDataType_t type = sizeof(T) == sizeof(double) ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const int64_t alignment = common_alignment({x, w, y});
  Context& c = context();
  const Plan* plan = nullptr;
  {
    const std::array<int64_t, 9> key = {type,    allow_tensor_cores, alignment, g.batch, g.channels, g.height, g.width,
                                        g.patch, out_channels};
    std::lock_guard<std::mutex> lock(c.mutex);
    auto found = c.plans.find(key);
    if (found == c.plans.end())
      found = c.plans.emplace(key, build_plan(type, allow_tensor_cores, alignment, g, out_channels)).first;
    if (!found->second) return false;
    plan = &*found->second;  // map entries are never erased: the pointer stays valid
  }
  void* workspace = plan->workspace_bytes > 0 ? device_alloc(static_cast<size_t>(plan->workspace_bytes)) : nullptr;
  try {
    const std::array<int64_t, 3> uids = {x_uid, w_uid, y_uid};
    const std::array<void*, 3> pointers = {const_cast<T*>(x), const_cast<T*>(w), y};
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    MCDL_CUDNN_CHECK(
        cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data()));
    MCDL_CUDNN_CHECK(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                                              pointers.data()));
    MCDL_CUDNN_CHECK(
        cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
    MCDL_CUDNN_CHECK(cudnnBackendFinalize(pack.get()));
    MCDL_CUDNN_CHECK(cudnnBackendExecute(c.handle, plan->plan.get(), pack.get()));
  } catch (...) {
    device_free(workspace);
    throw;
  }
  device_free(workspace);  // stream-ordered: released after the convolution has run
  return true;
}

}  // namespace

bool conv2d_patch_cudnn(const float* x, const float* w, float* y, const PatchGrid& grid, int64_t out_channels,
                        GemmMode mode) {
  return run_forward(x, w, y, grid, out_channels, mode != GemmMode::fp32);
}

// Double data: tensor cores compute in full double precision (DMMA), so every engine is fine.
bool conv2d_patch_cudnn(const double* x, const double* w, double* y, const PatchGrid& grid, int64_t out_channels,
                        GemmMode) {
  return run_forward(x, w, y, grid, out_channels, true);
}

}  // namespace mcdl::cuda
