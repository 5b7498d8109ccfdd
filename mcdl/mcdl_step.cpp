#include "mcdl/mcdl_step.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/profile.h"
#include "engine/random.h"
#include "mcdl/cluster_accuracy.h"
#include "mcdl/dcl_loss.h"
#include "mcdl/scoring.h"

namespace mcdl {
namespace {

Tensor zero_scalar(Device device) { return scalar_tensor(0.0, DType::f32, device); }

std::vector<int64_t> every_sample(int64_t n) {
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), int64_t{0});
  return all;
}

}  // namespace

double mcdl_loss_weight(const TrainConfig& config, int64_t epoch) {
  const TrainConfig c = with_variant_defaults(config);
  if (epoch < c.mcdl_start) return 0.0;
  return std::min(1.0, static_cast<double>(epoch - c.mcdl_start + 1) / static_cast<double>(c.mcdl_ramp + 1));
}

McdlStep::McdlStep(const TrainConfig& config) : config_(with_variant_defaults(config)) {}

Tensor add_mcdl_losses(const Tensor& base, const McdlTerms& terms, double lambda, double weight) {
  if (weight == 1.0) return base + terms.sup + (terms.semi + terms.self) * lambda;
  if (weight > 0) return base + (terms.sup + (terms.semi + terms.self) * lambda) * weight;
  return base;
}

McdlTerms McdlStep::run(const LogitsFunction& logits_of, const McdlBatch& batch, MemoryBank& bank_weak,
                        MemoryBank& bank_strong, bool losses) {
  const auto& [weak_logits, weak_projection, weak1, strong, labels, labelled, bank_index, epoch, iteration] = batch;
  const Device device = weak1.device();
  const int64_t b = weak1.size(0);
  const double temp = config_.student_temp;
  McdlTerms terms{zero_scalar(device), zero_scalar(device), zero_scalar(device)};

  // The strong view: with a graph only when L_self trains through it.
  Tensor strong_logits;
  {
    const ProfileRange range(device, "forward");
    std::optional<NoGradGuard> no_grad;
    if (!losses || !mcdl_loss_enabled(config_, "self")) no_grad.emplace();
    strong_logits = logits_of(strong);
  }
  std::vector<int64_t> rows, slots;  // batch rows of the unlabelled samples, and their bank slots
  for (int64_t i = 0; i < b; ++i)
    if (!labelled[static_cast<size_t>(i)]) {
      rows.push_back(i);
      slots.push_back(bank_index[static_cast<size_t>(i)]);
    }
  if (rows.empty()) return terms;
  const HostIndex rows_t(rows, device);
  const HostIndex slots_t(slots, device);  // checked on the host by the banks

  // p_w = (softmax(l_w1/τ) + softmax(l_w2/τ)) / 2 and p_s = softmax(l_s/τ), detached (spec §2).
  Tensor weak_probs, strong_probs;
  {
    const ProfileRange range(device, "mcdl_banks");
    {
      NoGradGuard no_grad;
      const Tensor logits = weak_logits.detach();
      weak_probs = index_select(
          (softmax(slice(logits, 0, 0, b) / temp) + softmax(slice(logits, 0, b, 2 * b) / temp)) * 0.5, rows_t);
      strong_probs = index_select(softmax(strong_logits.detach() / temp), rows_t);
    }
    bank_weak.update(slots_t, weak_probs);
    bank_strong.update(slots_t, strong_probs);
  }
  if (!losses) return terms;

  const auto [high, medium, low, mode_w] = bucket_samples(bank_weak, bank_strong, slots_t, config_.mu);
  const ProfileRange losses_range(device, "mcdl_losses");  // to the end: L_sup, L_semi, L_self

  // L_sup: labelled samples with their labels plus H with the weak bank's mode.
  std::vector<int64_t> sup_labels = labels;
  std::vector<uint8_t> is_high_row(static_cast<size_t>(b), 0);
  for (int64_t h : high) {
    sup_labels[static_cast<size_t>(rows[static_cast<size_t>(h)])] = mode_w[static_cast<size_t>(h)];
    is_high_row[static_cast<size_t>(rows[static_cast<size_t>(h)])] = 1;
  }
  if (mcdl_loss_enabled(config_, "sup")) {
    terms.sup = dcl_sup_loss(weak_projection, sup_labels, labelled, is_high_row, config_.tau_s);
    if (config_.sup_norm == "union" && !high.empty()) {
      // Each high anchor weighs what a labelled anchor weighs in SimGCD's SupCon (sup_weight over
      // the anchors of labelled ∪ H) instead of 1/|H|: a handful of high samples in a batch no
      // longer carries the weight of a whole batch (README: "Two MCDL variants").
      const auto num_labelled = static_cast<double>(std::count(labelled.begin(), labelled.end(), uint8_t{1}));
      const auto num_high = static_cast<double>(high.size());
      terms.sup = terms.sup * (config_.sup_weight * num_high / (num_high + num_labelled));
    }
  }

  // L_semi: MixMatch over X = H then M, on the first weak view.
  if (mcdl_loss_enabled(config_, "semi") && (!high.empty() || !medium.empty())) {
    std::vector<int64_t> x_unlabelled = high;  // positions among the unlabelled rows
    x_unlabelled.insert(x_unlabelled.end(), medium.begin(), medium.end());
    std::vector<int64_t> x_rows, x_slots, x_modes;
    std::vector<uint8_t> x_is_high;
    for (size_t i = 0; i < x_unlabelled.size(); ++i) {
      x_rows.push_back(rows[static_cast<size_t>(x_unlabelled[i])]);
      x_slots.push_back(slots[static_cast<size_t>(x_unlabelled[i])]);
      x_modes.push_back(mode_w[static_cast<size_t>(x_unlabelled[i])]);
      x_is_high.push_back(i < high.size() ? 1 : 0);
    }
    const HostIndex x_slots_t(x_slots, device);
    Tensor targets;
    {
      NoGradGuard no_grad;
      targets = mixmatch_targets(x_modes,
                                 bank_weak.mean_probs(x_slots_t), bank_strong.mean_probs(x_slots_t), x_is_high,
                                 config_.tau_u);
    }
    RandomStream stream(config_.seed, stream_id("mixmatch", {epoch, iteration}));
    const MixPlan plan = draw_mix_plan(static_cast<int64_t>(x_rows.size()), stream, config_.mix_alpha);
    const Tensor mixed_images = mix(index_select(weak1, HostIndex(x_rows, device)), plan);
    const Tensor mixed_targets = mix(targets, plan);
    const Tensor mixed_logits = profiled(device, "forward", [&] { return logits_of(mixed_images); });
    terms.semi = semi_loss(mixed_logits, mixed_targets, x_is_high, temp);
  }
  if (!mcdl_loss_enabled(config_, "self")) return terms;
  if (config_.self_threshold <= 0) {
    terms.self = self_loss(weak_probs, index_select(strong_logits, rows_t), config_.tau_u, temp);
    return terms;
  }
  // FixMatch's confidence mask: only the samples whose weak prediction is confident teach the
  // strong view, averaged over every unlabelled row (so fewer confident samples weigh less).
  const std::vector<float> confidence = max(weak_probs, 1).to(Device::cpu()).to(DType::f32).to_vector<float>();
  std::vector<int64_t> confident;
  for (size_t i = 0; i < confidence.size(); ++i)
    if (confidence[i] >= config_.self_threshold) confident.push_back(static_cast<int64_t>(i));
  if (confident.empty()) return terms;
  const HostIndex confident_t(confident, device);
  terms.self = self_loss(index_select(weak_probs, confident_t),
                         index_select(index_select(strong_logits, rows_t), confident_t), config_.tau_u, temp) *
               (static_cast<double>(confident.size()) / static_cast<double>(rows.size()));
  return terms;
}

BucketReport bucket_report(const MemoryBank& bank_weak, const MemoryBank& bank_strong, int64_t mu,
                           const std::vector<int64_t>& truth, const std::vector<int64_t>& cluster_to_class) {
  BucketReport report;
  const int64_t n = bank_weak.num_samples();
  NoGradGuard no_grad;
  const SampleBuckets buckets =
      bucket_samples(bank_weak, bank_strong, HostIndex(every_sample(n), bank_weak.device()), mu);
  const auto& [high, medium, low, mode_w] = buckets;
  report.counts = buckets.counts();
  auto mapped = [&](int64_t cluster) {
    return cluster >= 0 && cluster < static_cast<int64_t>(cluster_to_class.size())
               ? cluster_to_class[static_cast<size_t>(cluster)]
               : -1;
  };
  auto accuracy = [&](const std::vector<int64_t>& members, const std::vector<int64_t>& pseudo, int64_t& known) {
    int64_t correct = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      const int64_t t = truth[static_cast<size_t>(members[i])];
      if (t < 0) continue;
      ++known;
      correct += mapped(pseudo[i]) == t ? 1 : 0;
    }
    return known == 0 ? std::nan("") : static_cast<double>(correct) / static_cast<double>(known);
  };
  std::vector<int64_t> high_pseudo;
  for (int64_t i : high) high_pseudo.push_back(mode_w[static_cast<size_t>(i)]);
  report.high_accuracy = accuracy(high, high_pseudo, report.known_high);
  std::vector<int64_t> medium_pseudo;
  if (!medium.empty()) {
    const HostIndex idx(medium, bank_weak.device());
    const Tensor mean = (bank_weak.mean_probs(idx) + bank_strong.mean_probs(idx)) * 0.5;
    medium_pseudo = argmax(mean, 1).to(Device::cpu()).to_vector<int64_t>();
  }
  report.medium_accuracy = accuracy(medium, medium_pseudo, report.known_medium);
  return report;
}

std::string append_bucket_columns(MetricsRow& row, const BucketReport& report) {
  row.push_back({"high", static_cast<double>(report.counts.high)});
  row.push_back({"medium", static_cast<double>(report.counts.medium)});
  row.push_back({"low", static_cast<double>(report.counts.low)});
  row.push_back({"high_pseudo_acc", report.high_accuracy});
  row.push_back({"medium_pseudo_acc", report.medium_accuracy});
  const std::string counts = "  H/M/L " + std::to_string(report.counts.high) + "/" +
                             std::to_string(report.counts.medium) + "/" + std::to_string(report.counts.low);
  // No known label in either bucket (a run without the unlabelled images' labels): nothing to score.
  if (std::isnan(report.high_accuracy) && std::isnan(report.medium_accuracy)) return counts;
  return counts + "  pseudo acc H " + percent(report.high_accuracy) + " M " + percent(report.medium_accuracy);
}

}  // namespace mcdl
