// The CUDA emulator's one exception type: invalid launch configurations, divergent barriers, warp
// operations that can never complete and misused intrinsics are all reported as EmulationError.
#pragma once
#include <stdexcept>

namespace mcdl::emu {

class EmulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mcdl::emu
