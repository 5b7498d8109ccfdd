#include "kernels/cuda/cudnn_plans.h"

#include <algorithm>
#include <bit>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "kernels/cuda/device_resource.h"
#include "kernels/cuda/runtime.h"

namespace mcdl::cuda {
namespace {

constexpr int64_t max_plan_batch = 128;  // the largest batch a plan is built for

struct Plans {
  std::mutex mutex;
  std::map<std::pair<const char*, CudnnShape>, CudnnPlan> by_shape;
};

void create_plans(Plans&) {}
void destroy_plans(Plans& plans) {
  for (auto& [key, plan] : plans.by_shape)
    if (plan.workspace) device_free(plan.workspace);
  plans.by_shape.clear();
}
DeviceResource<Plans> plans_resource(create_plans, destroy_plans);

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

// Builds the plan: the first configuration of the heuristics (mode A, then the fallback list) that
// finalizes. Leaves `refusal` set, with each mode's outcome, when none does.
void build_plan(CudnnPlan& out, CudnnGraphBuilder build, const CudnnShape& shape) {
  const CudnnLibrary& lib = cudnn_library();
  const cudnnHandle_t handle = cudnn_handle();
  out.graph = std::make_unique<CudnnGraph>();
  CudnnGraph& g = *out.graph;
  const BackendDescriptor& graph = build(g, shape, handle);
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
    out.refusal += "; its fused engines compile their kernels at run time, with NVRTC (libnvrtc.so.13 on the "
                   "loader's path) and the CUDA driver";
}

}  // namespace

std::vector<int64_t> cudnn_batch_chunks(int64_t batch) {
  std::vector<int64_t> chunks;
  for (int64_t left = batch; left > 0;) {
    const int64_t chunk = std::min<int64_t>(std::bit_floor(static_cast<uint64_t>(left)), max_plan_batch);
    chunks.push_back(chunk);
    left -= chunk;
  }
  return chunks;
}

const CudnnPlan* cudnn_plan(const char* name, const CudnnShape& shape, CudnnGraphBuilder build, CudnnShapeText text,
                            std::string* why) {
  try {
    Plans& plans = plans_resource.get();
    const std::lock_guard lock(plans.mutex);
    auto [entry, inserted] = plans.by_shape.try_emplace(std::pair{name, shape});
    CudnnPlan& plan = entry->second;
    if (inserted) {
      try {
        build_plan(plan, build, shape);
      } catch (const std::exception& e) {
        plan.graph.reset();
        plan.plan.reset();
        plan.refusal = e.what();
      }
    }
    if (plan.plan) return &plan;
    if (why) *why = std::string(name) + " at " + text(shape) + ": " + plan.refusal;
  } catch (const std::exception& e) {  // the library or its handle is unavailable
    if (why) *why = std::string(name) + ": " + e.what();
  }
  return nullptr;
}

void run_cudnn_plan(const CudnnPlan& plan, const std::vector<int64_t>& uids, const std::vector<void*>& pointers,
                    const char* what) {
  void* workspace = plan.workspace;
  BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set_int64s(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
           pointers.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
      .finalize();
  check_cudnn(cudnn_library().execute(cudnn_handle(), plan.plan->get(), pack.get()), what);
}

CudnnEngineVerdicts cudnn_engine_verdicts(CudnnGraphBuilder build, const CudnnShape& shape,
                                          const std::string& device_properties) {
  const CudnnLibrary& lib = cudnn_library();
  CudnnGraph g;
  const BackendDescriptor& graph = build(g, shape, nullptr);
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

bool cudnn_aligned(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

}  // namespace mcdl::cuda
