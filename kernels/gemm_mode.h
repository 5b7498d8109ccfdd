// How a device computes float matrix products, an argument of the CPU and CUDA GEMMs alike:
// full fp32; TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation); or bf16 tensor cores
// (inputs rounded to bf16, 7-bit mantissa, as PyTorch's autocast does; fp32 accumulation and
// fp32 output). The host computes bf16 mode through oneDNN (kernels/cpu/gemm_bf16.h) and tf32 mode
// in full fp32 (it has no TF32).
#pragma once

namespace mcdl {

enum class GemmMode { fp32, tf32, bf16 };

}  // namespace mcdl
