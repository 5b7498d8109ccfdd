// libFuzzer entry point for mcdl::fuzz::side_channel_hello (tests/fuzz/targets.h).
#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return mcdl::fuzz::side_channel_hello(data, size);
}
