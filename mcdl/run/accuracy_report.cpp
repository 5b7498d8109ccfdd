#include "mcdl/run/accuracy_report.h"

#include <cmath>
#include <cstdio>

namespace mcdl {

std::string percent(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f", 100.0 * fraction);
  return buf;
}

KnownLabels known_labels(const std::vector<int64_t>& truth, const std::vector<int64_t>& predictions,
                         const std::vector<bool>& is_old) {
  KnownLabels k;
  for (size_t i = 0; i < truth.size(); ++i)
    if (truth[i] >= 0) {
      k.truth.push_back(truth[i]);
      k.predictions.push_back(predictions[i]);
      k.is_old.push_back(is_old[i]);
    }
  return k;
}

ClusterAccuracy known_accuracy(const KnownLabels& k, bool balanced) {
  if (k.truth.empty()) return {std::nan(""), std::nan(""), std::nan("")};
  return balanced ? split_cluster_acc_v2b(k.truth, k.predictions, k.is_old)
                  : split_cluster_acc_v2(k.truth, k.predictions, k.is_old);
}

std::vector<std::string> accuracy_columns(bool balanced_too, const std::string& prefix) {
  std::vector<std::string> names;
  for (const char* suffix : {"", "_v2b"}) {
    if (*suffix && !balanced_too) break;
    for (const char* part : {"all", "old", "new"}) names.push_back(prefix + part + suffix);
  }
  return names;
}

ClusterAccuracy append_accuracy(MetricsRow& row, const KnownLabels& known, bool balanced_too,
                                const std::string& prefix) {
  const ClusterAccuracy acc = known_accuracy(known, false);
  const std::vector<std::string> names = accuracy_columns(balanced_too, prefix);
  std::vector<double> values = {acc.all, acc.old_classes, acc.new_classes};
  if (balanced_too) {
    const ClusterAccuracy bal = known_accuracy(known, true);
    values.insert(values.end(), {bal.all, bal.old_classes, bal.new_classes});
  }
  for (size_t i = 0; i < names.size(); ++i) row.push_back({names[i], values[i]});
  return acc;
}

std::string accuracy_summary(const ClusterAccuracy& acc, const std::string& images) {
  if (std::isnan(acc.all) && std::isnan(acc.old_classes) && std::isnan(acc.new_classes))
    return "no labels for " + images + ": nothing to score";
  return "All " + percent(acc.all) + " Old " + percent(acc.old_classes) + " New " + percent(acc.new_classes);
}

std::string predictions_csv(const std::vector<int64_t>& ids, const std::vector<int64_t>& predictions,
                            const std::vector<int64_t>& truth, int64_t num_old_classes) {
  std::string csv = "id,prediction,label,old\n";
  for (size_t i = 0; i < predictions.size(); ++i)
    csv += std::to_string(ids[i]) + "," + std::to_string(predictions[i]) + "," + std::to_string(truth[i]) + "," +
           (truth[i] < 0 ? "unknown" : truth[i] < num_old_classes ? "old" : "new") + "\n";
  return csv;
}

std::string append_test_accuracy(MetricsRow& row, const TrainingData& data, const std::vector<int64_t>& predictions,
                                 ClusterAccuracy& accuracy) {
  accuracy = append_accuracy(row, known_labels(data.test_labels(), predictions, data.test_is_old()),
                             data.dataset.balanced_accuracy, "test_");
  return std::isnan(accuracy.all) ? "  " + accuracy_summary(accuracy, "the test images")
                                   : "  test " + accuracy_summary(accuracy);
}

void write_test_predictions(const RunDirectory& run, const TrainingData& data, const std::vector<int64_t>& predictions) {
  run.write_text("test_predictions.csv",
                 predictions_csv(data.test, predictions, data.test_labels(), data.num_old_classes()));
}

}  // namespace mcdl
