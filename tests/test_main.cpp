// The test runner: doctest, after the binary has set up (or ruled out) its CUDA device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "engine/device.h"
#include "tests/test_device.h"

int main(int argc, char** argv) {
  if (!mcdl::testing::prepare_test_device()) return 0;
  doctest::Context context(argc, argv);
  const int status = context.run();
  // Before main returns, so that compute-sanitizer's leak check (make test-gpu-sanitize) finds
  // every handle, stream and pool block released.
  mcdl::release_device_resources();
#if defined(__SANITIZE_ADDRESS__)
  // make test-asan: LeakSanitizer's check runs here, while the thread pools' workers are parked,
  // instead of at exit, where the libraries tear their pools down around it. Its tracer crashed
  // once at exit in CI (signal 11, after every test had passed); this is the same check, made
  // once, at a quiet moment. It ends the process with a report if anything leaked.
  __lsan_do_leak_check();
#endif
  return status;
}
