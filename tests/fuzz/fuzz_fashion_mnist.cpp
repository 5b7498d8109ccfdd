// libFuzzer entry point for mcdl::fuzz::fashion_mnist (tests/fuzz/targets.h).
#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return mcdl::fuzz::fashion_mnist(data, size); }
