// Scoring a run's predictions against the labels that are known (the folder layout may have
// none: then NaN), the metrics columns and predictions.csv they give, and the percentages of the
// summary lines.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mcdl/evaluation/cluster_accuracy.h"
#include "mcdl/run/run_directory.h"
#include "mcdl/run/training_data.h"

namespace mcdl {

std::string percent(double fraction);  // "61.9"

// The samples whose label is known: their labels, predictions and old/new flags.
struct KnownLabels {
  std::vector<int64_t> truth, predictions;
  std::vector<bool> is_old;
};
KnownLabels known_labels(const std::vector<int64_t>& truth, const std::vector<int64_t>& predictions,
                         const std::vector<bool>& is_old);
ClusterAccuracy known_accuracy(const KnownLabels& known, bool balanced);
// The columns append_accuracy fills: <prefix>all/old/new and, for datasets scored balanced too,
// <prefix>all_v2b/old_v2b/new_v2b (prefix "" for the unlabelled images, "test_" for the test split).
std::vector<std::string> accuracy_columns(bool balanced_too, const std::string& prefix = "");
// Appends those columns to the metrics row; returns the v2 accuracy.
ClusterAccuracy append_accuracy(MetricsRow& row, const KnownLabels& known, bool balanced_too,
                                const std::string& prefix = "");
// "All 61.9 Old 70.1 New 57.8" (percentages) for the summary lines; where no image had a known
// label (all three NaN), "no labels for <images>: nothing to score".
std::string accuracy_summary(const ClusterAccuracy& acc, const std::string& images = "the unlabelled images");
// "id,prediction,label,old" rows (old/new/unknown by the label).
std::string predictions_csv(const std::vector<int64_t>& ids, const std::vector<int64_t>& predictions,
                            const std::vector<int64_t>& truth, int64_t num_old_classes);

// The inductive columns (test_all / test_old / test_new, and the v2b ones where the dataset is
// scored balanced) of predictions on the test split (data.test's order), the clusters matched on
// that split alone; sets `accuracy`. Returns the summary line's part ("  test All ... Old ... New ...").
std::string append_test_accuracy(MetricsRow& row, const TrainingData& data, const std::vector<int64_t>& predictions,
                                 ClusterAccuracy& accuracy);
// The final epoch's test_predictions.csv of those predictions.
void write_test_predictions(const RunDirectory& run, const TrainingData& data, const std::vector<int64_t>& predictions);

}  // namespace mcdl
