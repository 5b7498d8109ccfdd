// Which GELU an MLP's first product applies on the frozen blocks' bf16 path: DINO's exact
// 0.5·x·(1 + erf(x/√2)), or the tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))),
// the only GELU cuBLASLt's epilogues compute. The two differ by at most about 5e-4 (near |x| = 2),
// under a bf16 rounding for most values; the tanh form lets the GPU apply the GELU inside fc1's
// product instead of in a pass of its own over the hidden units.
#pragma once
#include <math.h>

#include <cstdint>

#include "kernels/host_device.h"

namespace mcdl {

enum class GeluForm : uint8_t { erf, tanh };

// The tanh approximation in float (PyTorch's nn.GELU(approximate='tanh')): the CUDA fallback's
// formula and the emulated cuBLASLt epilogue's.
MCDL_HOST_DEVICE inline float gelu_tanh(float x) {
  const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);  // √(2/π)·(x + 0.044715·x³)
  return 0.5f * x * (1.0f + tanhf(inner));
}

}  // namespace mcdl
