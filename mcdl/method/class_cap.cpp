#include "mcdl/method/class_cap.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "mcdl/method/credibility.h"

namespace mcdl {

int64_t class_cap_quota(double cap, int64_t num_samples, int64_t num_clusters) {
  if (!(cap > 0) || num_clusters <= 0) fail("class_cap_quota: expected a positive cap and cluster count, got ", cap,
                                            " and ", num_clusters);
  const auto quota = static_cast<int64_t>(std::floor(cap * static_cast<double>(num_samples) /
                                                     static_cast<double>(num_clusters)));
  return std::max<int64_t>(1, quota);
}

std::vector<uint8_t> class_cap_demotions(const std::vector<int64_t>& high_slots,
                                         const std::vector<int64_t>& pseudo_labels,
                                         const std::vector<float>& confidence, int64_t num_samples, int64_t quota) {
  if (pseudo_labels.size() != high_slots.size() || confidence.size() != high_slots.size())
    fail("class_cap_demotions: ", high_slots.size(), " high slots but ", pseudo_labels.size(), " pseudo-labels and ",
         confidence.size(), " confidences");
  std::vector<uint8_t> demoted(static_cast<size_t>(num_samples), 0);
  std::map<int64_t, std::vector<size_t>> members;  // pseudo-label → positions in high_slots
  for (size_t i = 0; i < high_slots.size(); ++i) {
    if (high_slots[i] < 0 || high_slots[i] >= num_samples)
      fail("class_cap_demotions: slot ", high_slots[i], " is outside 0..", num_samples - 1);
    members[pseudo_labels[i]].push_back(i);
  }
  for (auto& [label, positions] : members) {
    if (static_cast<int64_t>(positions.size()) <= quota) continue;
    std::stable_sort(positions.begin(), positions.end(), [&](size_t a, size_t b) {
      if (confidence[a] != confidence[b]) return confidence[a] > confidence[b];
      return high_slots[a] < high_slots[b];
    });
    for (size_t r = static_cast<size_t>(quota); r < positions.size(); ++r)
      demoted[static_cast<size_t>(high_slots[positions[r]])] = 1;
  }
  return demoted;
}

std::vector<uint8_t> class_cap_demotions(const MemoryBank& bank_weak, const MemoryBank& bank_strong, int64_t mu,
                                         double cap) {
  const int64_t n = bank_weak.num_samples();
  NoGradGuard no_grad;
  const SampleBuckets buckets = bucket_samples(bank_weak, bank_strong, HostIndex(every_slot(n), bank_weak.device()), mu);
  std::vector<int64_t> labels;
  std::vector<float> confidence;
  if (!buckets.high.empty()) {
    for (int64_t h : buckets.high) labels.push_back(buckets.weak_mode[static_cast<size_t>(h)]);
    // The weak bank's mean probability of each high sample's own pseudo-label (once an epoch: the
    // [h, K] means copied to the host).
    const Tensor mean = bank_weak.mean_probs(HostIndex(buckets.high, bank_weak.device()));
    const std::vector<float> host = mean.to(Device::cpu()).to(DType::f32).to_vector<float>();
    const auto k = static_cast<size_t>(bank_weak.num_classes());
    for (size_t i = 0; i < labels.size(); ++i) confidence.push_back(host[i * k + static_cast<size_t>(labels[i])]);
  }
  return class_cap_demotions(buckets.high, labels, confidence, n,
                             class_cap_quota(cap, n, bank_weak.num_classes()));
}

}  // namespace mcdl
