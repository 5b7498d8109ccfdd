#include "mcdl/method/gcd_loss.h"

#include "engine/error.h"
#include "engine/ops.h"
#include "mcdl/method/simgcd_loss.h"

namespace mcdl {

GcdLossTerms gcd_loss(const Tensor& outputs, const std::vector<int64_t>& labels, const std::vector<uint8_t>& labelled,
                      double sup_weight, double temperature) {
  const char* op = "gcd_loss";
  check(outputs.defined() && outputs.dim() == 2 && outputs.size(0) > 0 && outputs.size(0) % 2 == 0, op,
        ": outputs must be [2B, C] with B > 0 (view 1's rows, then view 2's), got ",
        outputs.defined() ? outputs.str() : std::string("undefined"));
  const int64_t b = outputs.size(0) / 2;
  check(static_cast<int64_t>(labels.size()) == b && static_cast<int64_t>(labelled.size()) == b, op, ": expected ", b,
        " labels and labelled flags for outputs ", outputs.str(), ", got ", labels.size(), " and ", labelled.size());
  // contrastive_training.py: features = F.normalize(projection_head(backbone(images))), then
  // info_nce_logits (which normalises once more, as info_nce_loss does) on all rows and
  // SupConLoss on cat([f1[mask_lab], f2[mask_lab]]) viewed per sample.
  const Tensor z = l2_normalize(outputs);
  std::vector<int64_t> rows, row_labels;
  for (int64_t i = 0; i < b; ++i) {
    const uint8_t flag = labelled[static_cast<size_t>(i)];
    check(flag <= 1, op, ": labelled flag ", int{flag}, " at ", i, " is not 0 or 1");
    if (flag) rows.push_back(i);
  }
  const size_t count = rows.size();
  for (size_t k = 0; k < count; ++k) rows.push_back(rows[k] + b);
  for (int64_t r : rows) row_labels.push_back(labels[static_cast<size_t>(r % b)]);

  GcdLossTerms t;
  t.contrastive = info_nce_loss(z, temperature);
  if (rows.empty()) {
    // No labelled sample: SupConLoss would average an empty set (NaN); the term is 0.
    t.supcon = zeros({}, z.dtype(), z.device());
  } else {
    std::vector<int64_t> anchors(rows.size());
    for (size_t k = 0; k < anchors.size(); ++k) anchors[k] = static_cast<int64_t>(k);
    t.supcon = supcon_loss(index_select(z, HostIndex(rows, z.device())), row_labels, anchors, 0.07, 0.07);
  }
  t.total = (1 - sup_weight) * t.contrastive + sup_weight * t.supcon;
  return t;
}

}  // namespace mcdl
