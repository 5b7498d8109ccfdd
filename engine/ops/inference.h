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
// The scores and the softmax in fp32, the softmax numerators rounded to bf16 for the product
// with v. On a CUDA device it follows attention_algorithm().
Tensor bf16_attention(const Tensor& qkv, int64_t num_heads);

// How bf16_attention runs on a CUDA device: fused (the default: one tensor-core kernel, no
// [B·H, T, T] scores in memory; head sizes 16 to 64 in steps of 16, other sizes take the
// unfused path), or unfused (two batched cuBLAS products with a softmax kernel between them,
// the scores rounded to bf16 in a scratch of B·H·T·T). `make bench-gpu` times both.
enum class AttentionAlgorithm { fused, unfused };
void set_attention_algorithm(AttentionAlgorithm algorithm);
AttentionAlgorithm attention_algorithm();

}  // namespace mcdl
