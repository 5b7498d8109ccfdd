// libFuzzer entry point for mcdl::fuzz::mat (tests/fuzz/targets.h).
#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return mcdl::fuzz::mat(data, size); }
