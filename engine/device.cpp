#include "engine/device.h"

#include <cstdio>

#include "engine/error.h"
#include "engine/storage.h"
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

size_t device_memory_free(Device device) { return device.is_cuda() ? cuda::device_memory().free : 0; }

void release_device_resources() {
  if (const int64_t live = storage_live_bytes(Device::cuda()); live > 0)
    std::fprintf(stderr, "warning: %lld bytes of GPU tensors are still alive at release; they stay allocated\n",
                 static_cast<long long>(live));
  cuda::release_device();
}

}  // namespace mcdl
