#include "mcdl/method/mcdl_step.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/profile.h"
#include "engine/random.h"
#include "mcdl/method/dcl_loss.h"

namespace mcdl {
namespace {

Tensor zero_scalar(Device device) { return scalar_tensor(0.0, DType::f32, device); }

}  // namespace

double mcdl_loss_weight(const McdlSettings& s, int64_t epoch) {
  if (epoch < s.start) return 0.0;
  return std::min(1.0, static_cast<double>(epoch - s.start + 1) / static_cast<double>(s.ramp + 1));
}

Tensor add_mcdl_losses(const Tensor& base, const McdlTerms& terms, double lambda, double weight) {
  if (weight == 1.0) return base + terms.sup + (terms.semi + terms.self) * lambda;
  if (weight > 0) return base + (terms.sup + (terms.semi + terms.self) * lambda) * weight;
  return base;
}

McdlTerms McdlStep::run(const LogitsFunction& logits_of, const McdlBatch& batch, MemoryBank& bank_weak,
                        MemoryBank& bank_strong, bool losses) {
  const auto& [weak_logits, weak_projection, weak1, strong, labels, labelled, bank_index, epoch, iteration,
               teacher_weak_logits, teacher_strong_logits, shards] = batch;
  const Device device = weak1.device();
  const int64_t b = weak1.size(0);
  const double temp = settings_.student_temp;
  McdlTerms terms{zero_scalar(device), zero_scalar(device), zero_scalar(device), Tensor()};

  // The strong view: with a graph only when L_self trains through it.
  Tensor strong_logits;
  {
    const ProfileRange range(device, "forward");
    std::optional<NoGradGuard> no_grad;
    if (!losses || !settings_.losses.self) no_grad.emplace();
    strong_logits = logits_of(strong);
  }
  terms.strong_logits = strong_logits.detach();
  std::vector<int64_t> rows, slots;  // batch rows of the unlabelled samples, and their bank slots
  for (int64_t i = 0; i < b; ++i)
    if (!labelled[static_cast<size_t>(i)]) {
      rows.push_back(i);
      slots.push_back(bank_index[static_cast<size_t>(i)]);
    }
  if (rows.empty()) return terms;
  const HostIndex rows_t(rows, device);
  const HostIndex slots_t(slots, device);  // checked on the host by the banks

  // p_w = (softmax(l_w1/τ) + softmax(l_w2/τ)) / 2 and p_s = softmax(l_s/τ), detached (docs/method.md §2).
  Tensor weak_probs, strong_probs;
  {
    const ProfileRange range(device, "mcdl_banks");
    {
      NoGradGuard no_grad;
      const Tensor logits = (teacher_weak_logits ? *teacher_weak_logits : weak_logits).detach();
      weak_probs = index_select(
          (softmax(slice(logits, 0, 0, b) / temp) + softmax(slice(logits, 0, b, 2 * b) / temp)) * 0.5, rows_t);
      strong_probs =
          index_select(softmax((teacher_strong_logits ? *teacher_strong_logits : strong_logits).detach() / temp), rows_t);
    }
    bank_weak.update(slots_t, weak_probs);
    bank_strong.update(slots_t, strong_probs);
  }
  if (!losses) return terms;

  auto [high, medium, low, mode_w] = bucket_samples(bank_weak, bank_strong, slots_t, settings_.mu);
  if (!demoted_.empty()) {
    // The class cap: the marked high samples join the medium ones (positions stay ascending).
    const auto marked = [&](int64_t h) { return demoted_[static_cast<size_t>(slots[static_cast<size_t>(h)])] != 0; };
    std::vector<int64_t> kept;
    for (int64_t h : high) (marked(h) ? medium : kept).push_back(h);
    high = std::move(kept);
    std::sort(medium.begin(), medium.end());
  }
  const ProfileRange losses_range(device, "mcdl_losses");  // to the end: L_sup, L_semi, L_self

  // L_sup: labelled samples with their labels plus H with the weak bank's mode.
  std::vector<int64_t> sup_labels = labels;
  std::vector<uint8_t> is_high_row(static_cast<size_t>(b), 0);
  for (int64_t h : high) {
    sup_labels[static_cast<size_t>(rows[static_cast<size_t>(h)])] = mode_w[static_cast<size_t>(h)];
    is_high_row[static_cast<size_t>(rows[static_cast<size_t>(h)])] = 1;
  }
  if (settings_.losses.sup) {
    terms.sup = dcl_sup_loss(weak_projection, sup_labels, labelled, is_high_row, settings_.tau_s);
    if (settings_.sup_norm == SupNorm::labelled_and_high && !high.empty()) {
      // Each high anchor weighs what a labelled anchor weighs in SimGCD's SupCon (sup_weight over
      // the anchors of labelled ∪ H) instead of 1/|H|: a handful of high samples in a batch no
      // longer carries the weight of a whole batch (docs/method.md §7).
      const auto num_labelled = static_cast<double>(std::count(labelled.begin(), labelled.end(), uint8_t{1}));
      const auto num_high = static_cast<double>(high.size());
      terms.sup = terms.sup * (settings_.sup_weight * num_high / (num_high + num_labelled));
    }
  }

  // L_semi: MixMatch over X = H then M, on the first weak view.
  if (settings_.losses.semi && (!high.empty() || !medium.empty())) {
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
      // The banks keep f32; the targets follow the logits' dtype (f64 in the exactness tests).
      targets = mixmatch_targets(x_modes,
                                 bank_weak.mean_probs(x_slots_t), bank_strong.mean_probs(x_slots_t), x_is_high,
                                 settings_.tau_u)
                    .to(weak_logits.dtype());
    }
    RandomStream stream(settings_.seed, stream_id("mixmatch", {epoch, iteration}));
    const MixPlan plan = draw_mix_plan(static_cast<int64_t>(x_rows.size()), stream, settings_.mix_alpha);
    const Tensor x_images =
        shards ? shards->rows_everywhere(weak1, x_rows) : index_select(weak1, HostIndex(x_rows, device));
    const Tensor mixed_images = mix(x_images, plan);
    const Tensor mixed_targets = mix(targets, plan);
    const Tensor mixed_logits = profiled(device, "forward", [&] { return logits_of(mixed_images); });
    terms.semi = semi_loss(mixed_logits, mixed_targets, x_is_high, temp);
  }
  if (!settings_.losses.self) return terms;
  if (settings_.self_threshold <= 0) {
    terms.self = self_loss(weak_probs, index_select(strong_logits, rows_t), settings_.tau_u, temp);
    return terms;
  }
  // FixMatch's confidence mask: only the samples whose weak prediction is confident teach the
  // strong view, averaged over every unlabelled row (so fewer confident samples weigh less).
  const std::vector<float> confidence = max(weak_probs, 1).to(Device::cpu()).to(DType::f32).to_vector<float>();
  std::vector<int64_t> confident;
  for (size_t i = 0; i < confidence.size(); ++i)
    if (confidence[i] >= settings_.self_threshold) confident.push_back(static_cast<int64_t>(i));
  if (confident.empty()) return terms;
  const HostIndex confident_t(confident, device);
  terms.self = self_loss(index_select(weak_probs, confident_t),
                         index_select(index_select(strong_logits, rows_t), confident_t), settings_.tau_u, temp) *
               (static_cast<double>(confident.size()) / static_cast<double>(rows.size()));
  return terms;
}

}  // namespace mcdl
