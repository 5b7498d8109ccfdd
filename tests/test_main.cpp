// The test runner: doctest, after the binary has set up (or ruled out) its CUDA device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "engine/device.h"
#include "tests/test_device.h"

int main(int argc, char** argv) {
  if (!mcdl::testing::prepare_test_device()) return 0;
  doctest::Context context(argc, argv);
  const int status = context.run();
  // Before main returns, so that compute-sanitizer's leak check (make test-gpu-sanitize) finds
  // every handle, stream and pool block released.
  mcdl::release_device_resources();
  return status;
}
