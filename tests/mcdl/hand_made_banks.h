// Memory banks filled by hand, shared by the bucket report's and the class cap's tests: μ = 1,
// K = 3, six samples. Weak argmax / confidence: s0 0/.9, s1 1/.7, s2 2/.6, s3 0/.4, s4 1/.85, s5
// no entry. The strong view agrees on s0, s2, s3 (high) and not on s1, s4 (medium); s5 is low.
#pragma once
#include "engine/ops.h"
#include "mcdl/method/memory_bank.h"

namespace mcdl::testing {

struct HandMadeBanks {
  MemoryBank weak, strong;
  explicit HandMadeBanks(Device device) : weak(6, 3, 1, device), strong(6, 3, 1, device) {
    const HostIndex seen({0, 1, 2, 3, 4}, device);
    weak.update(seen, from_vector<float>({0.9f, 0.05f, 0.05f, 0.2f, 0.7f, 0.1f, 0.1f, 0.3f, 0.6f, 0.4f, 0.35f, 0.25f,
                                          0.1f, 0.85f, 0.05f},
                                         {5, 3}, device));
    strong.update(seen, from_vector<float>({0.8f, 0.1f, 0.1f, 0.6f, 0.3f, 0.1f, 0.1f, 0.2f, 0.7f, 0.5f, 0.3f, 0.2f,
                                            0.1f, 0.2f, 0.7f},
                                           {5, 3}, device));
  }
};

}  // namespace mcdl::testing
