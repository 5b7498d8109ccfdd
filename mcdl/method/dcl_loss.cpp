#include "mcdl/method/dcl_loss.h"

#include <algorithm>

#include "engine/dispatch.h"
#include "engine/ops.h"
#include "mcdl/method/simgcd_loss.h"

namespace mcdl {
namespace {

std::string describe(const Tensor& t) { return t.defined() ? t.str() : std::string("undefined"); }

// The rows flagged 1 and the rows flagged 0, each ascending; flags must be 0 or 1.
void split_rows(const char* op, const std::vector<uint8_t>& flags, std::vector<int64_t>& ones,
                std::vector<int64_t>& zeros_) {
  for (size_t i = 0; i < flags.size(); ++i) {
    check(flags[i] <= 1, op, ": flag ", int{flags[i]}, " at ", i, " is not 0 or 1");
    (flags[i] ? ones : zeros_).push_back(static_cast<int64_t>(i));
  }
}

void check_matrix(const char* op, const Tensor& x, const char* name) {
  check(x.defined() && x.dim() == 2, op, ": ", name, " must be [n, K], got ", describe(x));
  check_floating(op, x);
}

}  // namespace

Tensor sharpen(const Tensor& p, double temperature) {
  check(p.defined() && p.dim() >= 1, "sharpen: expected a tensor with a class dimension, got ", describe(p));
  check(temperature > 0, "sharpen: temperature must be positive, got ", temperature);
  const Tensor powered = pow(p, 1.0 / temperature);
  return powered / sum(powered, -1, true);
}

Tensor dcl_sup_loss(const Tensor& projections, const std::vector<int64_t>& labels, const std::vector<uint8_t>& labelled,
                    const std::vector<uint8_t>& is_high, double temperature) {
  const char* op = "dcl_sup_loss";
  check_matrix(op, projections, "projections");
  const int64_t b = static_cast<int64_t>(labels.size());
  check(b > 0 && projections.size(0) == 2 * b && labelled.size() == labels.size() && is_high.size() == labels.size(),
        op, ": projections ", projections.str(), " need [2B, D] for B = ", b, " labels, with ", labelled.size(),
        " labelled and ", is_high.size(), " is_high flags");
  // The union U (labelled or high) in sample order, then the same samples' view-2 rows.
  std::vector<int64_t> rows, union_labels, anchors;
  for (int64_t i = 0; i < b; ++i) {
    const uint8_t lab = labelled[static_cast<size_t>(i)], high = is_high[static_cast<size_t>(i)];
    check(lab <= 1 && high <= 1, op, ": flags at ", i, " are not 0 or 1");
    check(!(lab && high), op, ": sample ", i, " is both labelled and high");
    if (lab || high) rows.push_back(i);
  }
  const size_t count = rows.size();
  for (size_t k = 0; k < count; ++k) rows.push_back(rows[k] + b);
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t sample = rows[k] % b;
    union_labels.push_back(labels[static_cast<size_t>(sample)]);
    if (is_high[static_cast<size_t>(sample)]) anchors.push_back(static_cast<int64_t>(k));
  }
  if (anchors.empty()) return zeros({}, projections.dtype(), projections.device());
  const Tensor features = l2_normalize(index_select(projections, HostIndex(rows, projections.device())));
  return supcon_loss(features, union_labels, anchors, temperature, temperature);
}

Tensor mixmatch_targets(const std::vector<int64_t>& mode_w, const Tensor& mean_w, const Tensor& mean_s,
                        const std::vector<uint8_t>& is_high, double tau_u) {
  const char* op = "mixmatch_targets";
  check_matrix(op, mean_w, "mean_w");
  check_same_dtype_device(op, mean_w, mean_s);
  const int64_t n = mean_w.size(0), k = mean_w.size(1);
  check(mean_s.shape() == mean_w.shape() && static_cast<int64_t>(mode_w.size()) == n &&
            static_cast<int64_t>(is_high.size()) == n,
        op, ": expected n modes, mean_w and mean_s [n, K] and n flags, got ", mode_w.size(), " modes, ",
        mean_w.str(), ", ", mean_s.str(), " and ", is_high.size(), " flags");
  std::vector<int64_t> high, medium;
  split_rows(op, is_high, high, medium);
  const Device device = mean_w.device();
  std::vector<Tensor> parts;  // the high rows' targets, then the medium rows'
  if (!high.empty()) {
    std::vector<int64_t> high_modes;
    for (int64_t row : high) high_modes.push_back(mode_w[static_cast<size_t>(row)]);
    parts.push_back(one_hot(HostIndex(high_modes, device), k, mean_w.dtype()));
  }
  if (!medium.empty()) {
    const HostIndex rows(medium, device);
    parts.push_back(sharpen((index_select(mean_w, rows) + index_select(mean_s, rows)) / 2.0, tau_u));
  }
  if (parts.empty()) return empty({0, k}, mean_w.dtype(), device);
  // Back into X's order: row i sits at its place among the high rows, or after all of them.
  std::vector<int64_t> place(static_cast<size_t>(n));
  for (size_t j = 0; j < high.size(); ++j) place[static_cast<size_t>(high[j])] = static_cast<int64_t>(j);
  for (size_t j = 0; j < medium.size(); ++j)
    place[static_cast<size_t>(medium[j])] = static_cast<int64_t>(high.size() + j);
  return index_select(parts.size() == 1 ? parts[0] : concat(parts, 0), HostIndex(place, device));
}

MixPlan draw_mix_plan(int64_t n, RandomStream& stream, double alpha) {
  check(n >= 0 && alpha > 0, "draw_mix_plan: expected n >= 0 and alpha > 0, got ", n, " and ", alpha);
  const double delta = stream.beta(alpha, alpha);
  MixPlan plan;
  plan.delta = std::max(delta, 1.0 - delta);
  plan.permutation = stream.permutation(n);
  return plan;
}

Tensor mix(const Tensor& x, const MixPlan& plan) {
  check(x.defined() && x.dim() >= 1 && x.size(0) == static_cast<int64_t>(plan.permutation.size()),
        "mix: x must have one row per permutation entry (", plan.permutation.size(), "), got ", describe(x));
  check(plan.delta >= 0.5 && plan.delta <= 1.0, "mix: delta must lie in [0.5, 1], got ", plan.delta);
  check_floating("mix", x);
  return x * plan.delta + index_select(x, HostIndex(plan.permutation, x.device())) * (1.0 - plan.delta);
}

Tensor semi_loss(const Tensor& mixed_logits, const Tensor& mixed_targets, const std::vector<uint8_t>& is_high,
                 double student_temp) {
  const char* op = "semi_loss";
  check_matrix(op, mixed_logits, "mixed_logits");
  check_same_dtype_device(op, mixed_logits, mixed_targets);
  check(mixed_targets.shape() == mixed_logits.shape() && static_cast<int64_t>(is_high.size()) == mixed_logits.size(0),
        op, ": mixed_logits ", mixed_logits.str(), ", mixed_targets ", mixed_targets.str(), " and ", is_high.size(),
        " flags do not match");
  std::vector<int64_t> high, medium;
  split_rows(op, is_high, high, medium);
  const Device device = mixed_logits.device();
  Tensor loss = zeros({}, mixed_logits.dtype(), device);
  if (!high.empty()) {
    const HostIndex rows(high, device);
    loss =
        loss + cross_entropy_soft(index_select(mixed_logits, rows) / student_temp, index_select(mixed_targets, rows));
  }
  if (!medium.empty()) {
    // mse_loss averages over |M|·K elements; ×K leaves the squared L2 norm averaged over rows.
    const HostIndex rows(medium, device);
    const Tensor probs = softmax(index_select(mixed_logits, rows) / student_temp);
    loss = loss + mse_loss(probs, index_select(mixed_targets, rows)) * static_cast<double>(mixed_logits.size(1));
  }
  return loss;
}

Tensor self_loss(const Tensor& weak_probs, const Tensor& strong_logits, double tau_u, double student_temp) {
  const char* op = "self_loss";
  check_matrix(op, weak_probs, "weak_probs");
  check_same_dtype_device(op, weak_probs, strong_logits);
  check(strong_logits.shape() == weak_probs.shape(), op, ": weak_probs ", weak_probs.str(), " and strong_logits ",
        strong_logits.str(), " differ in shape");
  if (weak_probs.size(0) == 0) return zeros({}, strong_logits.dtype(), strong_logits.device());
  return cross_entropy_soft(strong_logits / student_temp, sharpen(weak_probs.detach(), tau_u));
}

}  // namespace mcdl
