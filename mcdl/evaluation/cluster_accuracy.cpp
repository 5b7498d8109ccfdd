#include "mcdl/evaluation/cluster_accuracy.h"

#include <algorithm>
#include <limits>
#include <set>

#include "engine/error.h"
#include "mcdl/evaluation/hungarian.h"

namespace mcdl {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_labels(const char* op, const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  check(y_true.size() == y_pred.size(), op, ": ", y_true.size(), " labels but ", y_pred.size(), " predictions");
  check(!y_true.empty(), op, ": no samples");
  for (size_t i = 0; i < y_true.size(); ++i)
    check(y_true[i] >= 0 && y_pred[i] >= 0, op, ": sample ", i, " has label ", y_true[i], " and prediction ",
          y_pred[i], "; both must be non-negative");
}

void check_mask(const char* op, const std::vector<int64_t>& y_true, const std::vector<bool>& is_old) {
  check(is_old.size() == y_true.size(), op, ": the old-class mask has ", is_old.size(), " entries for ",
        y_true.size(), " samples");
}

// ind_map of the reference: class → cluster, from linear_sum_assignment(w.max() − w).
std::vector<int64_t> class_to_cluster(const Contingency& w) {
  const int64_t d = w.size;
  const int64_t w_max = *std::max_element(w.counts.begin(), w.counts.end());
  std::vector<double> cost(w.counts.size());
  for (size_t i = 0; i < cost.size(); ++i) cost[i] = static_cast<double>(w_max - w.counts[i]);
  const std::vector<int64_t> cluster_to_class = linear_sum_assignment(cost, d, d);
  std::vector<int64_t> result(static_cast<size_t>(d), -1);
  for (int64_t p = 0; p < d; ++p) result[cluster_to_class[p]] = p;
  return result;
}

int64_t class_total(const Contingency& w, int64_t c) {
  int64_t total = 0;
  for (int64_t p = 0; p < w.size; ++p) total += w.counts[p * w.size + c];
  return total;
}

// The ground-truth classes of the samples with is_old == old, in ascending order.
std::set<int64_t> classes_where(const std::vector<int64_t>& y_true, const std::vector<bool>& is_old, bool old) {
  std::set<int64_t> classes;
  for (size_t i = 0; i < y_true.size(); ++i)
    if (is_old[i] == old) classes.insert(y_true[i]);
  return classes;
}

// cluster_acc of the GCD repository: the accuracy of the best one-to-one cluster → class map.
double cluster_acc(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  if (y_true.empty()) return kNaN;
  const Contingency w = contingency(y_true, y_pred);
  const std::vector<int64_t> map = class_to_cluster(w);
  int64_t matched = 0;
  for (int64_t c = 0; c < w.size; ++c) matched += w.counts[map[c] * w.size + c];
  return static_cast<double>(matched) / static_cast<double>(y_true.size());
}

}  // namespace

Contingency contingency(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  check_labels("contingency", y_true, y_pred);
  Contingency w;
  w.size = std::max(*std::max_element(y_true.begin(), y_true.end()), *std::max_element(y_pred.begin(), y_pred.end())) + 1;
  w.counts.assign(static_cast<size_t>(w.size * w.size), 0);
  for (size_t i = 0; i < y_true.size(); ++i) ++w.counts[y_pred[i] * w.size + y_true[i]];
  return w;
}

std::vector<int64_t> v2_class_to_cluster(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  return class_to_cluster(contingency(y_true, y_pred));
}

std::vector<int64_t> v2_assignment(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred) {
  const std::vector<int64_t> to_cluster = v2_class_to_cluster(y_true, y_pred);
  std::vector<int64_t> to_class(to_cluster.size(), -1);
  for (size_t c = 0; c < to_cluster.size(); ++c) to_class[to_cluster[c]] = static_cast<int64_t>(c);
  return to_class;
}

ClusterAccuracy split_cluster_acc_v1(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                     const std::vector<bool>& is_old) {
  check_labels("split_cluster_acc_v1", y_true, y_pred);
  check_mask("split_cluster_acc_v1", y_true, is_old);
  std::vector<int64_t> old_true, old_pred, new_true, new_pred;
  for (size_t i = 0; i < y_true.size(); ++i) {
    (is_old[i] ? old_true : new_true).push_back(y_true[i]);
    (is_old[i] ? old_pred : new_pred).push_back(y_pred[i]);
  }
  ClusterAccuracy acc{0.0, cluster_acc(old_true, old_pred), cluster_acc(new_true, new_pred)};
  // All = weight·Old + (1 − weight)·New, weight = the fraction of old samples; an empty
  // subset (NaN) has weight 0 and is left out.
  const double weight = static_cast<double>(old_true.size()) / static_cast<double>(y_true.size());
  if (!old_true.empty()) acc.all += weight * acc.old_classes;
  if (!new_true.empty()) acc.all += (1.0 - weight) * acc.new_classes;
  return acc;
}

ClusterAccuracy split_cluster_acc_v2(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                     const std::vector<bool>& is_old) {
  check_labels("split_cluster_acc_v2", y_true, y_pred);
  check_mask("split_cluster_acc_v2", y_true, is_old);
  const Contingency w = contingency(y_true, y_pred);
  const std::vector<int64_t> map = class_to_cluster(w);
  int64_t matched = 0;
  for (int64_t c = 0; c < w.size; ++c) matched += w.counts[map[c] * w.size + c];
  // Old and New reuse the one assignment; each class's denominator is all its samples.
  auto subset_acc = [&](const std::set<int64_t>& classes) {
    int64_t hits = 0, total = 0;
    for (int64_t c : classes) {
      hits += w.counts[map[c] * w.size + c];
      total += class_total(w, c);
    }
    return total == 0 ? kNaN : static_cast<double>(hits) / static_cast<double>(total);
  };
  return {static_cast<double>(matched) / static_cast<double>(y_true.size()),
          subset_acc(classes_where(y_true, is_old, true)), subset_acc(classes_where(y_true, is_old, false))};
}

ClusterAccuracy split_cluster_acc_v2b(const std::vector<int64_t>& y_true, const std::vector<int64_t>& y_pred,
                                      const std::vector<bool>& is_old) {
  check_labels("split_cluster_acc_v2b", y_true, y_pred);
  check_mask("split_cluster_acc_v2b", y_true, is_old);
  const Contingency w = contingency(y_true, y_pred);
  const std::vector<int64_t> map = class_to_cluster(w);
  auto per_class = [&](const std::set<int64_t>& classes) {
    std::vector<double> accs;
    for (int64_t c : classes)
      accs.push_back(static_cast<double>(w.counts[map[c] * w.size + c]) / static_cast<double>(class_total(w, c)));
    return accs;
  };
  auto mean = [](const std::vector<double>& values) {
    double s = 0.0;
    for (double v : values) s += v;
    return values.empty() ? kNaN : s / static_cast<double>(values.size());
  };
  const std::vector<double> old_accs = per_class(classes_where(y_true, is_old, true));
  const std::vector<double> new_accs = per_class(classes_where(y_true, is_old, false));
  // All averages the concatenation, so a class seen among both old and new samples counts twice,
  // as in the reference.
  std::vector<double> all_accs = old_accs;
  all_accs.insert(all_accs.end(), new_accs.begin(), new_accs.end());
  return {mean(all_accs), mean(old_accs), mean(new_accs)};
}

std::vector<bool> old_mask_from_class_count(const std::vector<int64_t>& y_true, int64_t num_old_classes) {
  check(num_old_classes >= 0, "old_mask_from_class_count: num_old_classes = ", num_old_classes, " is negative");
  std::vector<bool> mask(y_true.size());
  for (size_t i = 0; i < y_true.size(); ++i) mask[i] = y_true[i] >= 0 && y_true[i] < num_old_classes;
  return mask;
}

std::vector<bool> old_mask_from_classes(const std::vector<int64_t>& y_true, const std::vector<int64_t>& old_classes) {
  const std::set<int64_t> old(old_classes.begin(), old_classes.end());
  std::vector<bool> mask(y_true.size());
  for (size_t i = 0; i < y_true.size(); ++i) mask[i] = old.count(y_true[i]) > 0;
  return mask;
}

}  // namespace mcdl
