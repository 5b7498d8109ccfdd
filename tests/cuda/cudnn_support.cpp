#include "tests/cuda/cudnn_support.h"

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <utility>
#include <vector>

#include "kernels/cuda/cudnn_backend.h"

namespace mcdl::testing {
namespace {

// The CUDA driver's library, or the toolkit's stub of it loaded under the driver's name (cuDNN opens
// libcuda.so.1 by that name, and the loader then returns the object already loaded under it, the
// stub's soname). Returns what was loaded ("" where neither is there), the same for every call.
std::string load_driver_or_its_stub() {
  static const std::string loaded = [] {
    if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) || dlopen("libcuda.so.1", RTLD_NOW))
      return std::string("the CUDA driver");
    for (const char* stub : {"/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda-13.0/lib64/stubs/libcuda.so",
                             "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so"})
      if (dlopen(stub, RTLD_NOW)) return std::string(stub);
    return std::string();
  }();
  return loaded;
}

bool accepting(int status) {
  return status == CUDNN_STATUS_SUCCESS || status == CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING;
}

// "index: status" for every engine, and the heuristics' offers, for the message.
std::string verdicts_text(const cuda::CudnnEngineVerdicts& v) {
  std::string text = "engine statuses";
  for (size_t i = 0; i < v.statuses.size(); ++i)
    text += (i ? ", " : " ") + std::to_string(i) + ": " + std::to_string(v.statuses[i]);
  for (const auto& [name, offered] :
       {std::pair{"; heuristics A offer", &v.heuristics_a}, std::pair{"; fallback offers", &v.fallback}}) {
    text += name;
    for (const int64_t engine : *offered) text += " " + std::to_string(engine);
  }
  if (v.plan_status) text += "; the first offer's plan: " + std::to_string(*v.plan_status);
  return text;
}

}  // namespace

EnvironmentVariable::EnvironmentVariable(const char* variable, const char* value) : name(variable) {
  if (const char* old = std::getenv(name)) previous = old;
  ::setenv(name, value, 1);
}

EnvironmentVariable::~EnvironmentVariable() {
  if (previous)
    ::setenv(name, previous->c_str(), 1);
  else
    ::unsetenv(name);
}

const char* const kHopperDescription =
    R"({"deviceName":"NVIDIA H100 80GB HBM3","deviceVer":900,"driverVer":13000,"cudaDeviceId":0,)"
    R"("multiProcessorCount":132,"smClockRateKHz":1980000,"memClockRateKHz":2619000,"l2CacheSize":52428800,)"
    R"("totalGlobalMem":85045870592,"maxGridSize":[2147483647,65535,65535],"maxBlockSize":[1024,1024,64],)"
    R"("maxThreadsPerBlock":1024,"maxThreadsPerSM":2048,"maxCtasPerSM":32,"regsPerBlock":65536,)"
    R"("maxRegistersPerSM":65536,"warpSize":32,"maxSharedMemoryPerBlock":49152,)"
    R"("maxSharedMemoryPerBlockOptin":232448,"reservedSharedMemoryPerBlock":1024,"pciDeviceId":9008,)"
    R"("isTccDriver":0,"supportCoopLaunch":1})";

RealCudnn::RealCudnn() {
  size_t version = 0;
  try {
    version = cuda::cudnn_library().version;
  } catch (const std::exception& e) {
    MESSAGE("no cuDNN 9 to load here: ", e.what());
    return;
  }
  if (version < 90800) {
    MESSAGE("cuDNN ", version, " needs a handle, so a GPU, to finalize a graph");
    return;
  }
  usable = true;
  driver = load_driver_or_its_stub();
  // cuDNN compiles with NVRTC, opened by name: without it, as without a driver, nothing compiles.
  const bool nvrtc = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_NOLOAD) || dlopen("libnvrtc.so.13", RTLD_NOW);
  MESSAGE(cuda::cudnn_description(), "; the driver's library: ", driver.empty() ? "none" : driver,
          std::string(nvrtc ? "" : "; NVRTC (libnvrtc.so.13): none"));
  if (!nvrtc) driver.clear();  // run-time compiled engines cannot compile: their offers are not checked
}

void check_planned_for_hopper(const cuda::CudnnEngineVerdicts& v, bool driver) {
  INFO(verdicts_text(v));
  CHECK(std::count_if(v.statuses.begin(), v.statuses.end(), accepting) > 0);
  if (!driver) return;  // cuDNN's heuristics leave out the engines it could not compile
  const std::vector<int64_t>& offered = v.heuristics_a.empty() ? v.fallback : v.heuristics_a;
  REQUIRE_FALSE(offered.empty());
  REQUIRE(offered.front() >= 0);
  REQUIRE(offered.front() < static_cast<int64_t>(v.statuses.size()));
  CHECK(accepting(v.statuses[static_cast<size_t>(offered.front())]));
  REQUIRE(v.plan_status.has_value());
  CHECK((*v.plan_status == CUDNN_STATUS_SUCCESS || *v.plan_status == CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER));
}

}  // namespace mcdl::testing
