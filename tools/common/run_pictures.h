// The pictures of a run's last evaluation for mcdl_report: predictions.csv read back, its
// classes against its clusters (confusion.svg, and a table per class for the page) and the
// t-SNE map of features.npy (embedding.svg), every class named (tools/common/run_classes.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/common/class_clusters.h"

namespace mcdl::tools {

// predictions.csv's rows (id,prediction,label,old): per evaluated image its cluster, its label
// (−1 unknown) and whether that is an old class.
struct Evaluation {
  std::vector<int64_t> predicted, truth;
  std::vector<bool> old;
  bool has_labels() const;  // whether any image's label is known
};
// The file's rows, or nothing when it does not exist.
std::optional<Evaluation> read_evaluation(const std::string& predictions_csv);

// The classes against the clusters of the images of known label (has_labels() must hold).
ClassClusters class_clusters(const Evaluation& evaluation);

// embedding.svg's text for the run in `run_dir` (features.npy row for row with its
// predictions.csv, read as `evaluation`; `table` its class_clusters where it has labels): t-SNE
// of at most 1,000 images, evenly spaced. Nothing when the run has no features.npy.
std::optional<std::string> embedding_picture(const std::string& run_dir, const Evaluation& evaluation,
                                             const std::optional<ClassClusters>& table,
                                             const std::vector<std::string>& class_names);

// The page's table of the classes: per class its group, images, the share in its own (matched)
// cluster, and the cluster that took most of the rest.
std::string class_table_html(const ClassClusters& table, const std::vector<std::string>& class_names);

}  // namespace mcdl::tools
