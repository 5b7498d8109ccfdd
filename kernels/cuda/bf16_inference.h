// The frozen blocks' inference path in bf16 (the CUDA twins of kernels/cpu/bf16_inference.h):
// bf16 activations in and out, every reduction and formula in fp32, one rounding to bf16 per
// output element. Forward only. The products are in kernels/cuda/gemm.h (gemm_bf16, linear_bf16).
// Launches are queued on the engine stream. Plain C++: engine code includes it.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"

namespace mcdl::cuda {

// y = (x − mean)·rsqrt(var + eps)·gamma + beta over each row of d elements (biased variance).
void layer_norm_bf16(const bf16* x, const float* gamma, const float* beta, bf16* y, int64_t rows, int64_t d,
                     float eps);
// y = 0.5·x·(1 + erf(x/√2)), the exact form (PyTorch nn.GELU).
void gelu_bf16(const bf16* x, bf16* y, int64_t n);
// y = softmax(x) over each row of d elements; in place allowed (y = x).
void softmax_bf16(const bf16* x, bf16* y, int64_t rows, int64_t d);
// y[r, c] += bias[c]: linear_bf16's bias where cuBLASLt's epilogue cannot take it.
void add_rows_bf16(bf16* y, const bf16* bias, int64_t rows, int64_t cols);

}  // namespace mcdl::cuda
