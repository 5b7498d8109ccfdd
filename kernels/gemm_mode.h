// How a device computes float matrix products, an argument of the CPU and CUDA GEMMs alike:
// full fp32, or TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation). The host has no
// tensor cores and computes every mode in full precision.
#pragma once

namespace mcdl {

enum class GemmMode { fp32, tf32 };

}  // namespace mcdl
