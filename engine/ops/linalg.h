// Matrix products: matmul (batched over leading dimensions) and the linear layer's x·Wᵀ + b.
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// a [..., M, K] · b [..., K, N] → [..., M, N]. The leading (batch) dimensions of a and b
// must be equal, or b is a plain [K, N] matrix shared by every batch entry.
Tensor matmul(const Tensor& a, const Tensor& b);

// x [..., in] · weightᵀ + bias → [..., out], with weight [out, in] and bias [out] (bias may
// be an undefined Tensor for no bias).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// How f32 matrix products run on a CUDA device: full fp32 (the default, as PyTorch ≥ 1.12)
// or TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation). The CPU always uses fp32.
enum class MatmulPrecision { fp32, tf32 };
void set_matmul_precision(MatmulPrecision precision);
MatmulPrecision matmul_precision();

}  // namespace mcdl
