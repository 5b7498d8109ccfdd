// MCDL's divide-and-conquer losses (docs/method.md §4): L_sup on the high-credibility samples,
// MixMatch's L_semi on high and medium ones, L_self on every unlabelled one, and their pieces
// (sharpening, targets, mixing). Composed of differentiable engine ops: CPU and CUDA alike.
// Row flags (labelled, is_high) and labels are host vectors, known on the host with the batch.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ops/indexing.h"  // one_hot
#include "engine/random.h"
#include "engine/tensor.h"

namespace mcdl {

// p^(1/T) / Σ_c p_c^(1/T) over the last dimension (MixMatch's sharpening), p ≥ 0.
Tensor sharpen(const Tensor& p, double temperature);

// L_sup: supcon_loss over the L2-normalised projections [2B, D] (view w1's rows, then w2's) of
// the union U of the labelled samples (their labels) and the high samples H (their weak mode,
// given in `labels` at those positions); anchors the rows of H in both views; positives the other
// rows of U with the same label, the other view included; temperature τ_s with no τ/base-τ
// factor. labels, labelled and is_high are [B]; a sample may not be both labelled and high.
// 0 when H is empty.
Tensor dcl_sup_loss(const Tensor& projections, const std::vector<int64_t>& labels,
                    const std::vector<uint8_t>& labelled, const std::vector<uint8_t>& is_high,
                    double temperature = 0.04);

// The MixMatch targets of X = H ∪ M in X's order: one_hot(mode_w) for a high row,
// sharpen((mean_w + mean_s)/2, tau_u) for a medium row. mode_w [n] (the weak bank's modes, on
// the host: checked there, so no read-back), mean_w and mean_s [n, K] (the banks' mean
// predictions), is_high [n]; the result has mean_w's dtype and device.
Tensor mixmatch_targets(const std::vector<int64_t>& mode_w, const Tensor& mean_w, const Tensor& mean_s,
                        const std::vector<uint8_t>& is_high, double tau_u = 0.7);

// One MixMatch draw for a batch of n mixed samples: δ ~ Beta(alpha, alpha), delta = δ' =
// max(δ, 1 − δ) ∈ [0.5, 1], then a uniform permutation π of 0..n-1 (drawn in that order).
struct MixPlan {
  std::vector<int64_t> permutation;
  double delta;
};
MixPlan draw_mix_plan(int64_t n, RandomStream& stream, double alpha = 0.5);

// x̃_i = δ'·x_i + (1 − δ')·x_π(i) along the first axis of x [n, ...] (images and targets alike).
Tensor mix(const Tensor& x, const MixPlan& plan);

// L_semi = mean_{i∈H} CE(ỹ_i, p̃_i) + mean_{i∈M} ‖ỹ_i − p̃_i‖²₂ with p̃ = softmax(mixed_logits /
// student_temp), mixed_logits and mixed_targets [n, K], is_high [n] (1: H, 0: M); each mean over
// its own rows, an empty part 0.
Tensor semi_loss(const Tensor& mixed_logits, const Tensor& mixed_targets, const std::vector<uint8_t>& is_high,
                 double student_temp = 0.1);

// L_self = mean_i Σ_c −sharpen(p_w, tau_u)_ic·log softmax(strong_logits/student_temp)_ic with
// weak_probs p_w [n, K] (detached here) and strong_logits [n, K]; 0 for n = 0.
Tensor self_loss(const Tensor& weak_probs, const Tensor& strong_logits, double tau_u = 0.7,
                 double student_temp = 0.1);

}  // namespace mcdl
