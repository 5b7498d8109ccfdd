#include "mcdl/method/bucket_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "mcdl/run/accuracy_report.h"

namespace mcdl {
namespace {

// The weak bank's latest prediction of each sample that has one: its slot, confidence (the
// largest probability) and argmax.
struct LatestPredictions {
  std::vector<int64_t> slots, classes;
  std::vector<float> confidence;
  int64_t full = 0;  // samples whose window holds μ predictions
};
LatestPredictions latest_predictions(const MemoryBank& bank) {
  const std::vector<int64_t> filled = bank.filled();
  const MemoryBank::Latest entries = bank.latest();
  LatestPredictions latest;
  for (size_t i = 0; i < filled.size(); ++i) {
    if (filled[i] == bank.mu()) ++latest.full;
    if (filled[i] == 0) continue;
    latest.slots.push_back(static_cast<int64_t>(i));
    latest.classes.push_back(entries.classes[i]);
    latest.confidence.push_back(entries.confidence[i]);
  }
  return latest;
}

}  // namespace

BucketReport bucket_report(const MemoryBank& bank_weak, const MemoryBank& bank_strong, int64_t mu, int64_t num_old,
                           const std::vector<int64_t>& truth, const std::vector<int64_t>& cluster_to_class) {
  BucketReport report;
  const int64_t n = bank_weak.num_samples();
  NoGradGuard no_grad;
  const SampleBuckets buckets =
      bucket_samples(bank_weak, bank_strong, HostIndex(every_slot(n), bank_weak.device()), mu);
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

  // The same numbers of known samples chosen by confidence instead: the most confident first (a
  // tie keeps the lower slot first), the high bucket's count, then the medium bucket's.
  const LatestPredictions latest = latest_predictions(bank_weak);
  std::vector<size_t> known;
  for (size_t i = 0; i < latest.slots.size(); ++i)
    if (truth[static_cast<size_t>(latest.slots[i])] >= 0) known.push_back(i);
  std::stable_sort(known.begin(), known.end(),
                   [&](size_t a, size_t b) { return latest.confidence[a] > latest.confidence[b]; });
  auto confident_accuracy = [&](size_t first, int64_t count) {
    const size_t end = std::min(known.size(), first + static_cast<size_t>(count));
    if (first >= end) return std::nan("");
    int64_t correct = 0;
    for (size_t r = first; r < end; ++r)
      correct += mapped(latest.classes[known[r]]) == truth[static_cast<size_t>(latest.slots[known[r]])] ? 1 : 0;
    return static_cast<double>(correct) / static_cast<double>(end - first);
  };
  report.high_confidence_accuracy = confident_accuracy(0, report.known_high);
  report.medium_confidence_accuracy = confident_accuracy(static_cast<size_t>(report.known_high), report.known_medium);

  // The high bucket's make-up by pseudo-label (no truth needed).
  std::map<int64_t, int64_t> per_cluster;
  for (int64_t cluster : high_pseudo) ++per_cluster[cluster];
  report.high_clusters = static_cast<int64_t>(per_cluster.size());
  int64_t largest = 0, old = 0;
  for (const auto& [cluster, count] : per_cluster) {
    largest = std::max(largest, count);
    if (cluster < num_old) old += count;
  }
  const double size = static_cast<double>(high.size());
  report.high_top_share = high.empty() ? std::nan("") : static_cast<double>(largest) / size;
  report.high_old_share = high.empty() ? std::nan("") : static_cast<double>(old) / size;
  report.bank_full = n == 0 ? std::nan("") : static_cast<double>(latest.full) / static_cast<double>(n);
  return report;
}

std::vector<std::string> bucket_columns() {
  return {"high",          "medium",          "low",           "high_pseudo_acc", "medium_pseudo_acc",
          "high_conf_acc", "medium_conf_acc", "high_clusters", "high_top_share",  "high_old_share", "bank_full"};
}

std::string append_bucket_columns(MetricsRow& row, const BucketReport& report) {
  row.push_back({"high", static_cast<double>(report.counts.high)});
  row.push_back({"medium", static_cast<double>(report.counts.medium)});
  row.push_back({"low", static_cast<double>(report.counts.low)});
  row.push_back({"high_pseudo_acc", report.high_accuracy});
  row.push_back({"medium_pseudo_acc", report.medium_accuracy});
  row.push_back({"high_conf_acc", report.high_confidence_accuracy});
  row.push_back({"medium_conf_acc", report.medium_confidence_accuracy});
  row.push_back({"high_clusters", static_cast<double>(report.high_clusters)});
  row.push_back({"high_top_share", report.high_top_share});
  row.push_back({"high_old_share", report.high_old_share});
  row.push_back({"bank_full", report.bank_full});
  const std::string counts = "  H/M/L " + std::to_string(report.counts.high) + "/" +
                             std::to_string(report.counts.medium) + "/" + std::to_string(report.counts.low);
  // No known label in either bucket (a run without the unlabelled images' labels): nothing to score.
  if (std::isnan(report.high_accuracy) && std::isnan(report.medium_accuracy)) return counts;
  return counts + "  pseudo acc H " + percent(report.high_accuracy) + " M " + percent(report.medium_accuracy);
}

}  // namespace mcdl
