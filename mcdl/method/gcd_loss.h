// GCD's training loss (Vaze et al., CVPR 2022; contrastive_training.py): InfoNCE over both views
// and SupCon over the labelled samples, on the projection head's outputs.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

struct GcdLossTerms {
  Tensor total;        // (1 − sup_weight)·contrastive + sup_weight·supcon, 0-dim
  Tensor contrastive;  // info_nce_loss over all 2B rows
  Tensor supcon;       // supcon_loss over the labelled samples' rows of both views (0 without any)
};

// GCD's loss on the head outputs [2B, out] (view 1's rows, then view 2's; not normalised):
// z = l2_normalize(outputs); contrastive = info_nce_loss(z, temperature) (GCD's
// info_nce_logits + CrossEntropyLoss; temperature 1.0 by default); supcon = SupConLoss()
// (τ = base τ = 0.07, contrast_mode 'all') over z's labelled rows of view 1 then view 2, with
// their labels. labels [B] (only labelled entries are read), labelled [B] (0/1).
GcdLossTerms gcd_loss(const Tensor& outputs, const std::vector<int64_t>& labels, const std::vector<uint8_t>& labelled,
                      double sup_weight, double temperature);

}  // namespace mcdl
