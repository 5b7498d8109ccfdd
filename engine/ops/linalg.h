// Matrix products: matmul (batched over leading dimensions) and the linear layer's x·Wᵀ + b,
// f32 ones at engine_settings().matmul_precision (engine/settings.h).
#pragma once
#include <string>

#include "engine/settings.h"
#include "engine/tensor.h"

namespace mcdl {

// a [..., M, K] · b [..., K, N] → [..., M, N]. The leading (batch) dimensions of a and b
// must be equal, or b is a plain [K, N] matrix shared by every batch entry.
Tensor matmul(const Tensor& a, const Tensor& b);
// scale · a [..., M, K] · b [..., N, K]ᵀ → [..., M, N] (PyTorch's a @ b.transpose(-2, -1) * scale)
// without materialising the transpose: the product reads b transposed, and applies the scale as
// its alpha instead of a pass of its own over the output (attention's 1/√d on its scores). Batch
// rules as matmul's. Scaling by a power of two is exact, so then the bits are those of the
// product followed by a multiplication, forward and backward.
Tensor matmul_transposed(const Tensor& a, const Tensor& b, double scale = 1.0);

// x [..., in] · weightᵀ + bias (+ residual) → [..., out], with weight [out, in], bias [out] and
// residual [..., out] (each may be an undefined Tensor for none). The residual (a transformer
// block's skip connection) rides in the product's epilogue on a GPU, where cuBLASLt takes it;
// on the CPU it is added after the product, the bits of linear(x, weight, bias) + residual.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const Tensor& residual = Tensor());

// "fp32", "tf32", "bf16"; parse_matmul_precision names the choices when the text is none of them.
const char* matmul_precision_name(MatmulPrecision precision);
MatmulPrecision parse_matmul_precision(const std::string& text);
// --precision for a run on `device`: "auto" is bf16 on a CUDA device (the fastest mode whose
// fidelity was measured) and fp32 on the CPU (results that do not depend on the processor; docs/performance.md,
// "Precision"); on the CPU tf32 is refused, and bf16 unless the processor multiplies bf16
// natively (AVX512-BF16), with a message that says what to do. Returns it, setting nothing: a
// run holds it in a ScopedEngineSettings.
MatmulPrecision select_matmul_precision(const std::string& text, Device device);

}  // namespace mcdl
