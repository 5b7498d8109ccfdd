// DINO's attention core through cuDNN's fused scaled-dot-product attention (its flash-attention
// engine), declared in kernels/cuda/bf16_inference.h.
//
// cuDNN 9 before 9.21 recognises the fused attention as a pattern of plain backend operations, the
// graph NVIDIA's cudnn-frontend builds for an inference SDPA node (its "composite" form):
//
//   S = Q·Kᵀ (fp32)   S' = S·scale   M = max over keys (S')   E = exp(S' − M)
//   Z = Σ over keys (E)   L = M + log Z (virtual)   P = E / Z (bf16)   O = P·V (bf16)
//
// L, the softmax statistics a training graph writes out, is computed into a virtual tensor that
// nothing reads: the frontend emits it for inference too, and cuDNN's pattern matcher requires it.
// Without it cuDNN 9.14 on an H200 and 9.19 told about an H100 without one (below) reject the
// graph in every engine ("Dropout set of ops not configured correctly").
//
// Q, K and V are read in place from the fused projection qkv [B, T, 3, H, hd] through strides, and
// O is written as [B, T, H, hd]. One execution plan per shape, built on first use and kept; the
// scale is a by-value scalar, so it is not part of the plan. Plans exist for batches of 1, 2, 4, ...
// up to 128 entries only, and a batch runs as a sum of those, largest first (108 = 64 + 32 + 8 + 4):
// the batch entries are independent, and a plan can cost seconds to build (cuDNN compiles its
// Hopper kernels at run time), so MixMatch's forwards, whose size changes from step to step, must
// not each build one. At most eight plans per token count and head shape.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/bf16_inference.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cudnn_backend.h"
#include "kernels/cuda/cudnn_graph.h"
#include "kernels/cuda/device_resource.h"
#include "kernels/cuda/runtime.h"

namespace mcdl::cuda {
namespace {

// The tensors' unique ids in the graph and the variant pack.
enum Uid : int64_t { q_uid = 1, k_uid, v_uid, o_uid, scale_uid, first_virtual_uid = 100 };

constexpr int64_t alignment_bytes = 16;
constexpr int64_t max_plan_batch = 128;  // the largest batch a plan is built for

struct Shape {
  int64_t batch, tokens, heads, head_dim;
  auto operator<=>(const Shape&) const = default;
};

// A plan and everything it was built from (kept alive with it).
struct Plan {
  std::unique_ptr<CudnnGraph> graph;  // tensors, operations, the graph, the configurations
  std::unique_ptr<BackendDescriptor> plan;
  void* workspace = nullptr;
  std::string refusal;  // why cuDNN offers no plan for the shape; empty when `plan` is set
};

struct Plans {
  std::mutex mutex;
  std::map<Shape, Plan> by_shape;
};

void create_plans(Plans&) {}
void destroy_plans(Plans& plans) {
  for (auto& [shape, plan] : plans.by_shape)
    if (plan.workspace) device_free(plan.workspace);
  plans.by_shape.clear();
}
DeviceResource<Plans> plans_resource(create_plans, destroy_plans);

// The SDPA graph of the header comment for one shape.
const BackendDescriptor& build_graph(CudnnGraph& g, const Shape& s, cudnnHandle_t handle) {
  const int64_t b = s.batch, t = s.tokens, h = s.heads, hd = s.head_dim, d = h * hd;
  // [B, H, T, hd] views of qkv [B, T, 3, H, hd]; Kᵀ swaps the last two.
  const std::vector<int64_t> qkv_strides = {t * 3 * d, hd, 3 * d, 1};
  const auto& q = g.tensor(q_uid, CUDNN_DATA_BFLOAT16, {b, h, t, hd}, qkv_strides, alignment_bytes);
  const auto& k_t = g.tensor(k_uid, CUDNN_DATA_BFLOAT16, {b, h, hd, t}, {t * 3 * d, hd, 1, 3 * d}, alignment_bytes);
  const auto& v = g.tensor(v_uid, CUDNN_DATA_BFLOAT16, {b, h, t, hd}, qkv_strides, alignment_bytes);
  const auto& o = g.tensor(o_uid, CUDNN_DATA_BFLOAT16, {b, h, t, hd}, {t * d, hd, d, 1}, alignment_bytes);
  const auto& scale = g.tensor(scale_uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, alignment_bytes, false, true);

  const auto& scores = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, t}, alignment_bytes);
  g.matmul(q, k_t, scores);
  const auto& scaled = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, t}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_MUL, scores, &scale, scaled);
  const auto& row_max = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, 1}, alignment_bytes);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scaled, row_max);
  const auto& shifted = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, t}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_SUB, scaled, &row_max, shifted);
  const auto& numerators = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, t}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, numerators);
  const auto& row_sum = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, 1}, alignment_bytes);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, numerators, row_sum);
  const auto& log_sum = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, 1}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_LOG, row_sum, nullptr, log_sum);
  const auto& statistics = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, 1}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_ADD, row_max, &log_sum, statistics);
  const auto& probabilities = g.intermediate(CUDNN_DATA_BFLOAT16, {b, h, t, t}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_DIV, numerators, &row_sum, probabilities);
  g.matmul(probabilities, v, o);
  BackendDescriptor& graph = g.graph(handle);
  graph.finalize();
  return graph;
}

// The heuristics' configurations for the graph in `mode`, best first: for the handle's GPU, or for
// the device `device` describes where given.
std::vector<BackendDescriptor*> engine_configs(CudnnGraph& g, const BackendDescriptor& graph,
                                               cudnnBackendHeurMode_t mode, const BackendDescriptor* device = nullptr) {
  const CudnnLibrary& lib = cudnn_library();
  BackendDescriptor& heuristics = g.keep(BackendDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (device) heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, *device);
  heuristics.finalize();
  int64_t count = 0;
  check_cudnn(lib.get_attribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                &count, nullptr),
              "cudnnBackendGetAttribute (the heuristics' count)");
  std::vector<BackendDescriptor*> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.push_back(&g.keep(BackendDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)));
    raw.push_back(configs.back()->get());
  }
  if (count == 0) return configs;
  int64_t returned = 0;
  check_cudnn(lib.get_attribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                &returned, raw.data()),
              "cudnnBackendGetAttribute (the heuristics' results)");
  configs.resize(static_cast<size_t>(std::min(returned, count)));
  return configs;
}

// Builds the plan for a shape: the first configuration of the heuristics (mode A, then the
// fallback list) that finalizes. Leaves `refusal` set, with each mode's outcome, when none does.
void build_plan(Plan& out, const Shape& shape) {
  const CudnnLibrary& lib = cudnn_library();
  const cudnnHandle_t handle = cudnn_handle();
  out.graph = std::make_unique<CudnnGraph>();
  CudnnGraph& g = *out.graph;
  const BackendDescriptor& graph = build_graph(g, shape, handle);
  std::string outcomes;
  size_t offered = 0;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    outcomes += mode == CUDNN_HEUR_MODE_A ? "heuristics A: " : "; fallback: ";
    std::vector<BackendDescriptor*> configs;
    try {
      configs = engine_configs(g, graph, mode);
    } catch (const std::exception& e) {
      outcomes += e.what();
      continue;
    }
    outcomes += std::to_string(configs.size()) + " configurations";
    offered += configs.size();
    for (BackendDescriptor* config : configs) {
      auto plan = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan->set_handle(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, handle)
          .set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *config);
      if (const cudnnStatus_t status = plan->try_finalize(); status != CUDNN_STATUS_SUCCESS) {
        outcomes += std::string(", one refused (") + lib.error_string(status) + ")";
        continue;
      }
      int64_t workspace_bytes = 0, returned = 0;
      check_cudnn(lib.get_attribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                    &returned, &workspace_bytes),
                  "cudnnBackendGetAttribute (the plan's workspace)");
      if (workspace_bytes > 0) out.workspace = device_alloc(static_cast<size_t>(workspace_bytes));
      out.plan = std::move(plan);
      return;
    }
  }
  out.refusal = "cuDNN offers no engine for it (" + outcomes + ")";
  // Seen without a GPU: the heuristics leave out the engines that cannot compile their kernels.
  if (offered == 0)
    out.refusal += "; its fused attention engines compile their kernels at run time, with NVRTC (libnvrtc.so.13 "
                   "on the loader's path) and the CUDA driver";
}

std::string shape_text(const Shape& s) {
  return "[B " + std::to_string(s.batch) + ", T " + std::to_string(s.tokens) + ", " + std::to_string(s.heads) +
         " heads of " + std::to_string(s.head_dim) + "]";
}

// The plan for a shape, built on first use; null with `why` set when there is none.
const BackendDescriptor* plan_for(const Shape& shape, void** workspace, std::string* why) {
  Plans& plans = plans_resource.get();
  const std::lock_guard lock(plans.mutex);
  auto [entry, inserted] = plans.by_shape.try_emplace(shape);
  Plan& plan = entry->second;
  if (inserted) {
    try {
      build_plan(plan, shape);
    } catch (const std::exception& e) {
      plan.graph.reset();
      plan.plan.reset();
      plan.refusal = e.what();
    }
  }
  if (!plan.plan) {
    if (why) *why = "cuDNN attention at " + shape_text(shape) + ": " + plan.refusal;
    return nullptr;
  }
  *workspace = plan.workspace;
  return plan.plan.get();
}

bool aligned(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % alignment_bytes == 0; }

// The plan for the buffers and the shape (its workspace in `workspace`), or null with `why` set.
const BackendDescriptor* usable_plan(const bf16* qkv, const bf16* context, const Shape& shape, void** workspace,
                                     std::string* why) {
  if (shape.batch < 1 || shape.tokens < 1 || shape.heads < 1 || shape.head_dim < 8 || shape.head_dim % 8 != 0 ||
      !aligned(qkv) || !aligned(context)) {
    if (why)
      *why = "cuDNN attention at " + shape_text(shape) +
             ": needs a head size that is a multiple of 8 and 16-byte aligned buffers";
    return nullptr;
  }
  try {
    return plan_for(shape, workspace, why);
  } catch (const std::exception& e) {  // the library or its handle is unavailable
    if (why) *why = std::string("cuDNN attention: ") + e.what();
    return nullptr;
  }
}

}  // namespace

std::vector<int64_t> attention_bf16_cudnn_batch_chunks(int64_t batch) {
  std::vector<int64_t> chunks;
  for (int64_t left = batch; left > 0;) {
    const int64_t chunk = std::min<int64_t>(std::bit_floor(static_cast<uint64_t>(left)), max_plan_batch);
    chunks.push_back(chunk);
    left -= chunk;
  }
  return chunks;
}

void check_attention_bf16_cudnn_graph(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim) {
  CudnnGraph g;
  (void)build_graph(g, Shape{batch, tokens, heads, head_dim}, nullptr);
}

CudnnEngineVerdicts attention_bf16_cudnn_engine_verdicts(int64_t batch, int64_t tokens, int64_t heads,
                                                         int64_t head_dim, const std::string& device_properties) {
  const CudnnLibrary& lib = cudnn_library();
  CudnnGraph g;
  const BackendDescriptor& graph = build_graph(g, Shape{batch, tokens, heads, head_dim}, nullptr);
  BackendDescriptor& device = g.keep(BackendDescriptor(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR));
  device
      .set(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, static_cast<int64_t>(device_properties.size()),
           device_properties.data())
      .finalize();
  int64_t engines = 0, returned = 0;
  check_cudnn(lib.get_attribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1,
                                &returned, &engines),
              "cudnnBackendGetAttribute (the graph's engine count)");
  CudnnEngineVerdicts verdicts;
  for (int64_t index = 0; index < engines; ++index) {
    BackendDescriptor& engine = g.keep(BackendDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
    engine.set_descriptor(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph)
        .set_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, index)
        .set_descriptor(CUDNN_ATTR_ENGINE_DEVICEPROP, device);
    cudnnStatus_t status = engine.try_finalize();
    if (status == CUDNN_STATUS_SUCCESS) {  // the engine exists; its configuration checks the graph
      BackendDescriptor& config = g.keep(BackendDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      config.set_descriptor(CUDNN_ATTR_ENGINECFG_ENGINE, engine);
      status = config.try_finalize();
    }
    verdicts.statuses.push_back(static_cast<int>(status));
  }
  // What build_plan would try on that device, in its order.
  for (const auto& [mode, offered] : {std::pair{CUDNN_HEUR_MODE_A, &verdicts.heuristics_a},
                                      std::pair{CUDNN_HEUR_MODE_FALLBACK, &verdicts.fallback}})
    for (BackendDescriptor* config : engine_configs(g, graph, mode, &device)) {
      BackendDescriptor& engine = g.keep(BackendDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
      cudnnBackendDescriptor_t raw = engine.get();
      check_cudnn(lib.get_attribute(config->get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                    &returned, &raw),
                  "cudnnBackendGetAttribute (a configuration's engine)");
      int64_t index = -1;
      check_cudnn(lib.get_attribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &returned, &index),
                  "cudnnBackendGetAttribute (an engine's index)");
      offered->push_back(index);
      if (!verdicts.plan_status) {  // the first offer's execution plan, compiled for that device
        BackendDescriptor& plan = g.keep(BackendDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
        plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *config)
            .set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, device);
        verdicts.plan_status = static_cast<int>(plan.try_finalize());
      }
    }
  return verdicts;
}

bool attention_bf16_cudnn_supported(const bf16* qkv, const bf16* context, int64_t batch, int64_t tokens,
                                    int64_t heads, int64_t head_dim, std::string* why) {
  void* workspace = nullptr;
  for (const int64_t chunk : attention_bf16_cudnn_batch_chunks(batch))
    if (!usable_plan(qkv, context, Shape{chunk, tokens, heads, head_dim}, &workspace, why)) return false;
  return true;
}

void attention_bf16_cudnn(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                          int64_t head_dim, float scale) {
  const int64_t d = heads * head_dim;
  const std::vector<int64_t> uids = {q_uid, k_uid, v_uid, o_uid, scale_uid};
  int64_t first = 0;  // the chunk's first batch entry
  for (const int64_t chunk : attention_bf16_cudnn_batch_chunks(batch)) {
    const bf16* chunk_qkv = qkv + first * tokens * 3 * d;
    bf16* chunk_context = context + first * tokens * d;
    std::string why;
    void* workspace = nullptr;
    const BackendDescriptor* plan =
        usable_plan(chunk_qkv, chunk_context, Shape{chunk, tokens, heads, head_dim}, &workspace, &why);
    if (!plan) throw std::invalid_argument(why);
    // Device pointers, and for the by-value scale a host pointer to its value.
    std::vector<void*> pointers = {const_cast<bf16*>(chunk_qkv), const_cast<bf16*>(chunk_qkv + d),
                                   const_cast<bf16*>(chunk_qkv + 2 * d), chunk_context, &scale};
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set_int64s(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
             pointers.data())
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
        .finalize();
    check_cudnn(cudnn_library().execute(cudnn_handle(), plan->get(), pack.get()), "cudnnBackendExecute (attention)");
    first += chunk;
  }
}

}  // namespace mcdl::cuda
