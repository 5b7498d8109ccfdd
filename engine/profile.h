// Named ranges around work on a CUDA device, for a profiler's timeline (NVTX; see docs/performance.md,
// "Profiling a run on a GPU"): the backend seam opens one per kernel call (engine/backend.h), the training loop
// one per phase. On the CPU they do nothing.
#pragma once
#include "engine/device.h"
#include "kernels/cuda/runtime.h"

namespace mcdl {

// A range from construction to destruction, when `device` is a CUDA device. Names are string
// literals: nothing is formatted on the hot path.
class ProfileRange {
 public:
  ProfileRange(Device device, const char* name) : open_(device.is_cuda()) {
    if (open_) cuda::profile_range_push(name);
  }
  ~ProfileRange() {
    if (open_) cuda::profile_range_pop();
  }
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;

 private:
  bool open_;
};

// f() inside a range, for a phase that computes one value:
//   const Tensor loss = profiled(device, "loss", [&] { return ...; });
template <class F>
decltype(auto) profiled(Device device, const char* name, F&& f) {
  const ProfileRange range(device, name);
  return f();
}

}  // namespace mcdl
