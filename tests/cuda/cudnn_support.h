// What the cuDNN tests share: an environment variable set for a scope, the real cuDNN loaded in
// place of the emulated one, a Hopper GPU described to it, and the checks of what it answers for a
// graph on that device without a GPU (kernels/cuda/cudnn.h's CudnnEngineVerdicts).
#pragma once
#include <optional>
#include <string>

#include "kernels/cuda/cudnn.h"

namespace mcdl::testing {

// An environment variable set for a scope, then as it was.
struct EnvironmentVariable {
  const char* name;
  std::optional<std::string> previous;
  EnvironmentVariable(const char* variable, const char* value);
  ~EnvironmentVariable();
  EnvironmentVariable(const EnvironmentVariable&) = delete;
  EnvironmentVariable& operator=(const EnvironmentVariable&) = delete;
};

// An H100 SXM as cuDNN's device-property JSON describes a device (the keys cuDNN 9 reads; the
// values from NVIDIA's published H100 figures): compute capability 9.0, 132 SMs, 227 KB of shared
// memory per block, 50 MB of L2.
extern const char* const kHopperDescription;

// While it lives, the machine's real cuDNN (libcudnn.so.9) is the one loaded. `usable` says whether
// it can plan for a described device (cuDNN 9.8 or later, loaded); where not, the reason went to
// doctest's log. `driver` names the CUDA driver's library cuDNN's run-time compiled engines find:
// the machine's, else the toolkit's stub (its functions all fail, but with it cuDNN compiles an
// engine's kernels with NVRTC, failing only where the compiled module is loaded); empty where
// neither is there, or where NVRTC (libnvrtc.so.13) is not.
struct RealCudnn {
  EnvironmentVariable library{"MCDL_CUDNN_LIBRARY", "libcudnn.so.9"};
  bool usable = false;
  std::string driver;
  RealCudnn();
};

// Checks what cuDNN answered for one of the engine's graphs on the described Hopper GPU: an engine
// whose pattern matcher takes the graph; and where a driver library was there, heuristics that
// offer such an engine first (mode A, else the fallback list: the order in which the engine builds
// its plan on a GPU) and that offer's plan compiled (with the stub, up to the module's load:
// CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER).
void check_planned_for_hopper(const cuda::CudnnEngineVerdicts& verdicts, bool driver);

}  // namespace mcdl::testing
