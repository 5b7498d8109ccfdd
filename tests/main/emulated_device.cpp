// mcdl_tests: the CUDA kernels run in the CPU emulator, which reports one device.
#include "kernels/emu/runtime_api.h"
#include "tests/test_device.h"

namespace mcdl::testing {
bool prepare_test_device() {
  emu::set_device_count(1);
  return true;
}
}  // namespace mcdl::testing
