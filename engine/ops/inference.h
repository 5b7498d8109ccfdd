// Forward-only bf16 ops: the frozen blocks' path when the matmul precision is bf16
// (VisionTransformer). Activations are bf16 in and out; parameters stay f32 and are rounded to
// bf16 where they enter a product (as PyTorch's autocast does), LayerNorm's gamma and beta are
// used in fp32; every reduction and formula runs in fp32 and each output element is rounded once.
// No graph is recorded: an input that requires a gradient is an error (frozen blocks only).
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// x [..., D] bf16, gamma and beta f32 [D].
Tensor bf16_layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);
// x [..., in] bf16 · weightᵀ (f32 [out, in]) + bias (f32 [out], or undefined for none) (+ residual
// bf16 [..., out], added in the product's epilogue) → bf16 [..., out].
Tensor bf16_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual = Tensor());
Tensor bf16_gelu(const Tensor& x);
// DINO's attention core on its fused projection qkv [B, T, 3·D] (split into q, k, v and heads as
// Attention::forward does): softmax(q·kᵀ/√(D/heads))·v with the heads merged back, [B, T, D].
Tensor bf16_attention(const Tensor& qkv, int64_t num_heads);

}  // namespace mcdl
