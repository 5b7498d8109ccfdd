// mcdl_tests_gpu: the same parity suite on a real GPU; skips with a message without one.
#include <cstdio>

#include "kernels/cuda/runtime.h"
#include "tests/test_device.h"

namespace mcdl::testing {
bool prepare_test_device() {
  if (!cuda::device_available()) {
    std::printf("mcdl_tests_gpu: no usable CUDA device here; skipping the GPU parity suite.\n");
    return false;
  }
  std::printf("mcdl_tests_gpu: running on %s\n", cuda::device_description().c_str());
  return true;
}
}  // namespace mcdl::testing
