// Execution plans for the engine's cuDNN graphs (.cu files only): built on first use from the
// configurations cuDNN's heuristics offer, kept by graph and shape until release_device(), run on
// a variant pack of device pointers; and the same graphs described to a device without a GPU
// (kernels/cuda/cudnn.h's CudnnEngineVerdicts).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/cudnn_backend.h"
#include "kernels/cuda/cudnn_graph.h"

namespace mcdl::cuda {

// The numbers a graph is built for (trailing ones 0): fixed-size, so that looking a plan up, at
// every call of an op, allocates nothing.
using CudnnShape = std::array<int64_t, 4>;

// Adds a graph's operations for `shape` to `g` and returns its operation graph, finalized: with
// `handle` where not null (cuDNN 9.8 and later take none).
using CudnnGraphBuilder = const BackendDescriptor& (*)(CudnnGraph& g, const CudnnShape& shape, cudnnHandle_t handle);
// The shape as a message shows it ("[B 128, T 197, ...]").
using CudnnShapeText = std::string (*)(const CudnnShape& shape);

// A plan and everything it was built from (kept alive with it); `workspace` is null where the
// plan needs none.
struct CudnnPlan {
  std::unique_ptr<CudnnGraph> graph;
  std::unique_ptr<BackendDescriptor> plan;
  void* workspace = nullptr;
  std::string refusal;  // why cuDNN offers no plan; empty when `plan` is set
};

// The plan for graph `name` (a string that lives as long as the program: the cache keys on its
// address) at `shape`, built with `build` on first use and kept: the first configuration of the
// heuristics (mode A, then the fallback list) that finalizes. Null where there is none or cuDNN
// cannot be loaded, with `why` set to "<name> at <text(shape)>: <the reason>".
const CudnnPlan* cudnn_plan(const char* name, const CudnnShape& shape, CudnnGraphBuilder build, CudnnShapeText text,
                            std::string* why);

// Runs `plan` on the tensors with ids `uids`: device pointers, and for a by-value tensor a host
// pointer to its value. Throws, naming `what`, when cuDNN fails.
void run_cudnn_plan(const CudnnPlan& plan, const std::vector<int64_t>& uids, const std::vector<void*>& pointers,
                    const char* what);

// What the loaded cuDNN says of the graph `build` makes for `shape` (handle null) on the device
// that `device_properties` describes. Throws where the library cannot describe a device or
// refuses the graph or the description.
CudnnEngineVerdicts cudnn_engine_verdicts(CudnnGraphBuilder build, const CudnnShape& shape,
                                          const std::string& device_properties);

// Whether a device pointer is 16-byte aligned, the alignment the engine's graphs declare.
bool cudnn_aligned(const void* pointer);

}  // namespace mcdl::cuda
