// The patch-embedding convolution of a vision transformer.
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// nn.Conv2d with kernel_size = stride = P and no padding: x [B, C, H, W], weight [O, C, P, P]
// and bias [O] (or an undefined Tensor for none) → [B, O, H/P, W/P]. H and W must be
// divisible by P. On the CPU: im2col + GEMM. On a CUDA device the forward follows
// conv_algorithm() and the backward is im2col + GEMM.
Tensor conv2d_patch(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// How conv2d_patch's forward runs on a CUDA device: through cuDNN's graph API (the default;
// im2col + GEMM where cuDNN has no engine for the shape), or always as im2col + GEMM. Both
// follow matmul_precision() for f32 (TF32 tensor cores only when it is tf32).
enum class ConvAlgorithm { cudnn, im2col_gemm };
void set_conv_algorithm(ConvAlgorithm algorithm);
ConvAlgorithm conv_algorithm();

}  // namespace mcdl
