// Each test binary decides how the CUDA device exists: the emulated binary switches the
// emulator's device on; the GPU binary checks for a real one and skips without it.
#pragma once

namespace mcdl::testing {
// Returns false when the suite must not run (the reason is printed).
bool prepare_test_device();
}  // namespace mcdl::testing
