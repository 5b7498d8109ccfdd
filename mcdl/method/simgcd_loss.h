// SimGCD's training loss (Wen et al., ICCV 2023; docs/reference-facts.md §1.3), each term public, plus
// the generic supervised contrastive loss that MCDL's L_sup reuses. Every function composes
// differentiable engine ops, so it runs on the CPU and on a CUDA device and its gradients flow
// to the logits and projections. A batch of B samples gives 2B rows: view 1's rows, then
// view 2's. Labels and the labelled flags are host vectors (known on the host with the batch).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

struct SimGCDLossConfig {
  double student_temp = 0.1, warmup_teacher_temp = 0.07, teacher_temp = 0.04;
  int64_t warmup_teacher_epochs = 30, epochs = 200;
  double memax_weight = 2.0, sup_weight = 0.35, info_nce_temp = 1.0, supcon_temp = 0.07, supcon_base_temp = 0.07;
};

// The teacher temperature of a 0-based epoch in [0, epochs): SimGCD's
// np.concatenate((np.linspace(warmup, final, warmup_epochs), np.ones(epochs − warmup_epochs)·final))[epoch].
double teacher_temperature(const SimGCDLossConfig& config, int64_t epoch);

// Each a 0-dim tensor with the logits' dtype and device.
struct SimGCDLossTerms {
  Tensor total;    // (1−w)(cluster + memax_weight·memax) + w·cls + (1−w)·contrastive + w·supcon, w = sup_weight
  Tensor cls;      // CE(logits/student_temp) on the labelled rows of both views (0 without any)
  Tensor cluster;  // cross_view_distillation
  Tensor memax;    // mean_entropy_penalty (unweighted)
  Tensor contrastive;  // info_nce_loss on the projections
  Tensor supcon;       // supcon_loss on the labelled rows of both views (0 without any)
};

// logits [2B, K] (cosine logits), projections [2B, D] (not normalised), labels [B] (remapped
// classes; only labelled rows are read), labelled [B] (0/1). teacher_logits: an EMA teacher's
// logits of the same rows, the self-distillation's targets (undefined: the logits themselves).
SimGCDLossTerms simgcd_loss(const Tensor& logits, const Tensor& projections, const std::vector<int64_t>& labels,
                            const std::vector<uint8_t>& labelled, int64_t epoch, const SimGCDLossConfig& config,
                            const Tensor& teacher_logits = Tensor());

// DistillLoss with 2 crops: the mean over the two cross-view pairs of
// mean_b Σ_k −softmax(detached logits_t/teacher_temp)·log_softmax(logits_s/student_temp), teacher
// view 1 → student view 2 and teacher view 2 → student view 1. logits [2B, K]; logits_t are
// `teacher_logits` where defined (an EMA teacher's, same shape), else the logits themselves.
Tensor cross_view_distillation(const Tensor& logits, double student_temp, double teacher_temp,
                               const Tensor& teacher_logits = Tensor());

// log K − H(p̄) with p̄ = the mean over all rows of softmax(logits/student_temp) (SimGCD's me-max).
Tensor mean_entropy_penalty(const Tensor& logits, double student_temp);

// SimGCD's info_nce_logits + CrossEntropyLoss: rows of projections [2B, D] L2-normalised, S =
// F·Fᵀ/temperature with the diagonal dropped; the positive of row i is the other view of its
// sample (i ± B), every other row a negative; the mean over rows of −log softmax at the positive.
Tensor info_nce_loss(const Tensor& projections, double temperature);

// Supervised contrastive loss (Khosla et al., as SimGCD's SupConLoss with contrast_mode 'all')
// over features [N, D] (already L2-normalised) with labels [N] (host), for the anchor rows
// `anchors` (distinct, in [0, N)): for anchor a with positives P(a) = {p ≠ a : labels[p] ==
// labels[a]}, ℓ_a = −(temperature/base_temperature)·mean_{p∈P(a)} log(exp(s_ap) / Σ_{j≠a} exp(s_aj)),
// s = f·fᵀ/temperature; the loss is the mean of ℓ_a over the anchors, 0 without anchors. Every
// anchor must have a positive. SimGCD: every row an anchor, τ = base τ = 0.07. MCDL's L_sup
// (docs/method.md §4): anchors the rows of H only, τ = base τ = 0.04.
Tensor supcon_loss(const Tensor& features, const std::vector<int64_t>& labels, const std::vector<int64_t>& anchors,
                   double temperature, double base_temperature);

}  // namespace mcdl
