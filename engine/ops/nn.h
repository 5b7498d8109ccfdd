// Neural-network ops with PyTorch semantics: activations, normalisations and softmax over the
// last dimension, batched over all leading dimensions. f32 and f64, CPU (fused kernels in
// kernels/cpu/nn.h), differentiable in every floating input.
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// Exact GELU 0.5·x·(1 + erf(x/√2)), element-wise (PyTorch nn.GELU(), approximate='none').
Tensor gelu(const Tensor& x);

// Layer normalisation over the last dimension D: (x − mean)/√(var + eps)·gamma + beta with the
// biased variance (PyTorch F.layer_norm(x, [D], gamma, beta, eps)). gamma and beta are [D];
// either may be an undefined Tensor for no scale / no shift.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);

// Softmax and log-softmax over the last dimension (row maximum subtracted: stable for large
// logits).
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);

// x / max(‖x‖₂, eps) over the last dimension (PyTorch F.normalize(x, p=2, dim=-1, eps)).
Tensor l2_normalize(const Tensor& x, double eps = 1e-12);

// Weight normalisation w = g·v/‖v‖ per output row (PyTorch weight_norm, dim=0): v is
// [out, ...] (norm over all but the first dimension), g is [out] or [out, 1, ..., 1] with v's
// rank (PyTorch's weight_g). The result has v's shape.
Tensor weight_norm(const Tensor& v, const Tensor& g);

}  // namespace mcdl
