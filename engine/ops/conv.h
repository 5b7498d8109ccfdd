// The patch-embedding convolution of a vision transformer.
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// nn.Conv2d with kernel_size = stride = P and no padding: x [B, C, H, W], weight [O, C, P, P]
// and bias [O] (or an undefined Tensor for none) → [B, O, H/P, W/P]. H and W must be
// divisible by P. Both directions run as im2col + GEMM on either device (on a GPU measured twice
// as fast as cuDNN's graph API for the ViT-B/16 patch embedding of a batch of 128), the products
// at the matmul precision for f32.
Tensor conv2d_patch(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace mcdl
