// Matrix products: matmul (batched over leading dimensions) and the linear layer's x·Wᵀ + b.
#pragma once
#include <string>

#include "engine/tensor.h"

namespace mcdl {

// a [..., M, K] · b [..., K, N] → [..., M, N]. The leading (batch) dimensions of a and b
// must be equal, or b is a plain [K, N] matrix shared by every batch entry.
Tensor matmul(const Tensor& a, const Tensor& b);
// a [..., M, K] · b [..., N, K]ᵀ → [..., M, N] (PyTorch's a @ b.transpose(-2, -1)) without
// materialising the transpose: the product reads b transposed. Batch rules as matmul's.
Tensor matmul_transposed(const Tensor& a, const Tensor& b);

// x [..., in] · weightᵀ + bias → [..., out], with weight [out, in] and bias [out] (bias may
// be an undefined Tensor for no bias).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// How f32 matrix products run on a CUDA device: full fp32 (the default, as PyTorch ≥ 1.12),
// TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation), or bf16 tensor cores (inputs
// rounded to bf16 as PyTorch's autocast does; fp32 accumulation and output). On the CPU, bf16
// products run through oneDNN (Debian's OpenBLAS has no bf16 GEMM), and tf32 runs as fp32.
enum class MatmulPrecision { fp32, tf32, bf16 };
// "fp32", "tf32", "bf16"; parse_matmul_precision names the choices when the text is none of them.
const char* matmul_precision_name(MatmulPrecision precision);
MatmulPrecision parse_matmul_precision(const std::string& text);
// --precision for a run on `device`: "auto" is bf16 on a CUDA device (the fastest mode whose
// fidelity was measured) and fp32 on the CPU (results that do not depend on the processor; docs/performance.md,
// "Precision"); on the CPU tf32 is refused, and bf16 unless the processor multiplies bf16
// natively (AVX512-BF16), with a message that says what to do. Makes it the process's matmul
// precision and returns it.
MatmulPrecision select_matmul_precision(const std::string& text, Device device);
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision matmul_precision();

}  // namespace mcdl
