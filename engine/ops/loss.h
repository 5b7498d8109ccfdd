// Loss functions, each returning a 0-dim scalar with mean reduction (PyTorch defaults).
// f32 and f64, CPU (fused kernels in kernels/cpu/loss.h).
#pragma once
#include "engine/tensor.h"

namespace mcdl {

class HostIndex;  // engine/ops/indexing.h

// mean_n −log_softmax(logits)[n, targets[n]] with logits [N, C] and class indices targets [N]
// (i64 or i32). Every target must lie in [0, C): there is no ignore_index.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);
// The same with targets made on the host, range-checked there (no read-back from the device).
Tensor cross_entropy(const Tensor& logits, const HostIndex& targets);

// mean_n −Σ_c p[n, c]·log_softmax(logits)[n, c] with logits and target_probs both [N, C]
// (PyTorch F.cross_entropy with probability targets); differentiable in both.
Tensor cross_entropy_soft(const Tensor& logits, const Tensor& target_probs);

// mean((a − b)²) over all elements; a and b have the same shape; differentiable in both.
Tensor mse_loss(const Tensor& a, const Tensor& b);

}  // namespace mcdl
