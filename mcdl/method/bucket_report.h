// The end-of-epoch picture of MCDL's memory banks: bucket sizes, the pseudo-label accuracy of the
// high and medium samples (the paper's Table 6), and the paper's premise (its Fig. 2) measured:
// whether a prediction's consistency over time (the buckets) selects correct pseudo-labels better
// than its confidence (the same number of samples with the most confident latest prediction).
// Also the make-up of the high bucket: how many clusters it spans, the largest one's share and
// the share of old (labelled) classes, which the class-balance of its pseudo-labels depends on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mcdl/method/credibility.h"
#include "mcdl/method/memory_bank.h"
#include "mcdl/run/run_directory.h"

namespace mcdl {

// Pseudo-labels: high, the weak bank's mode; medium, the argmax of the mean of both banks'
// means; by confidence, the argmax of the weak bank's latest prediction. Each is mapped to a class
// through `cluster_to_class` (the epoch's v2 assignment). truth[i] is the label of bank slot i
// (−1: unknown, not scored); clusters below num_old are the old classes.
struct BucketReport {
  BucketCounts counts;
  int64_t known_high = 0, known_medium = 0;  // the samples with a truth label in each bucket
  double high_accuracy = 0.0, medium_accuracy = 0.0;  // over those; NaN for none
  // Among the samples with a truth label and a prediction, the known_high most confident and the
  // known_medium next most confident: their pseudo-labels' accuracy (NaN for none).
  double high_confidence_accuracy = 0.0, medium_confidence_accuracy = 0.0;
  int64_t high_clusters = 0;             // distinct pseudo-labels in the high bucket
  double high_top_share = 0.0;           // the most frequent one's share of it (NaN when empty)
  double high_old_share = 0.0;           // the share whose pseudo-label is an old class (NaN when empty)
  // The share of samples whose weak window is full (μ predictions): how far the banks have filled,
  // which the paper's schedule starts its losses by (NaN for no sample).
  double bank_full = 0.0;
};
BucketReport bucket_report(const MemoryBank& bank_weak, const MemoryBank& bank_strong, int64_t mu, int64_t num_old,
                           const std::vector<int64_t>& truth, const std::vector<int64_t>& cluster_to_class);

// The columns of a report over the unlabelled images (high, medium, low, high_pseudo_acc,
// medium_pseudo_acc, high_conf_acc, medium_conf_acc, high_clusters, high_top_share,
// high_old_share, bank_full), appended to a metrics row; returns the summary line's part
// ("  H/M/L 700/80/600  pseudo acc H 43.0 M 31.5", without the accuracies where no sample of
// either bucket has a known label).
std::vector<std::string> bucket_columns();
std::string append_bucket_columns(MetricsRow& row, const BucketReport& report);

}  // namespace mcdl
