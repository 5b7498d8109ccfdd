// The test runner: doctest, after the binary has set up (or ruled out) its CUDA device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/test_device.h"

int main(int argc, char** argv) {
  if (!mcdl::testing::prepare_test_device()) return 0;
  doctest::Context context(argc, argv);
  return context.run();
}
