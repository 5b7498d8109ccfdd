#include "engine/device.h"

#include <cstdio>

#include "engine/error.h"
#include "kernels/cuda/runtime.h"

namespace mcdl {

Device select_device(const std::string& request) {
  if (request == "cpu") return Device::cpu();
  if (request == "cuda") {
    check(cuda::device_available(), "--device cuda: no usable CUDA device was found (no GPU or no driver); ",
          "run with --device cpu");
    return Device::cuda();
  }
  check(request == "auto", "--device: expected cpu, cuda or auto, got '", request, "'");
  if (cuda::device_available()) return Device::cuda();
  std::fprintf(stderr, "No usable CUDA device found: running on the CPU.\n");
  return Device::cpu();
}

}  // namespace mcdl
