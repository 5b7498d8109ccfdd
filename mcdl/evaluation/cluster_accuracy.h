// Clustering accuracy for Generalized Category Discovery, exactly as the GCD and SimGCD
// repositories compute it (docs/reference-facts.md §1.8, util/cluster_and_log_utils.py):
//   v2  one Hungarian assignment over all samples (the reported metric, docs/method.md §6);
//   v2b the same assignment, per-class (balanced) accuracies averaged (Herbarium19);
//   v1  separate assignments on the old-class and the new-class samples (GCD only).
// Labels and predictions are non-negative integers; `is_old` marks, per sample, the samples
// whose ground-truth class is an old (labelled) class. An Old or New value over an empty
// subset, where the Python code would raise, is NaN.
#pragma once
#include <cstdint>
#include <vector>

namespace mcdl {

struct ClusterAccuracy {
  double all, old_classes, new_classes;
};

// The contingency table of the reference: D = max(max pred, max true) + 1 and
// w[pred * D + true] = number of samples with that pair.
struct Contingency {
  int64_t size = 0;
  std::vector<int64_t> counts;
};
Contingency contingency(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred);

// The v2 assignment, class → cluster: linear_sum_assignment(w.max() − w) on the table above,
// the reference's `ind_map` (every class 0..D−1 gets a cluster).
std::vector<int64_t> v2_class_to_cluster(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred);
// The same assignment read the other way, cluster → class: what a predicted cluster id
// means. Use it to score pseudo-labels (e.g. a bucket's) against ground truth with the epoch's
// v2 mapping: a sample is right when v2_assignment(...)[pred] == true label. Indices run over
// 0..D−1; a cluster id ≥ D never occurred in y_pred and has no class.
std::vector<int64_t> v2_assignment(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred);

ClusterAccuracy split_cluster_acc_v1(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                     const std::vector<bool>& is_old);
ClusterAccuracy split_cluster_acc_v2(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                     const std::vector<bool>& is_old);
ClusterAccuracy split_cluster_acc_v2b(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                      const std::vector<bool>& is_old);

// The per-sample mask of the reference, `target in range(num_old_classes)`.
std::vector<bool> old_mask_from_class_count(const std::vector<int64_t>& y_true, int64_t num_old_classes);
// The mask for an explicit set of old classes.
std::vector<bool> old_mask_from_classes(const std::vector<int64_t>& y_true, const std::vector<int64_t>& old_classes);

}  // namespace mcdl
