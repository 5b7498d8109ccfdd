// libFuzzer entry point for mcdl::fuzz::decode (tests/fuzz/targets.h).
#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return mcdl::fuzz::decode(data, size); }
