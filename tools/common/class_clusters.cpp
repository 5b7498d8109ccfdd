#include "tools/common/class_clusters.h"

#include <algorithm>

#include "engine/error.h"
#include "mcdl/evaluation/cluster_accuracy.h"

namespace mcdl::tools {

int64_t ClassClusters::column_of(int64_t cluster) const {
  return cluster >= 0 && cluster < static_cast<int64_t>(column_of_cluster.size())
             ? column_of_cluster[static_cast<size_t>(cluster)]
             : -1;
}

int64_t ClassClusters::class_total(int64_t label) const {
  int64_t total = 0;
  for (int64_t n : counts[static_cast<size_t>(label)]) total += n;
  return total;
}

ClassClusters match_classes(const std::vector<int64_t>& truth, const std::vector<int64_t>& predicted, int64_t num_old) {
  check(truth.size() == predicted.size() && !truth.empty(), "match_classes: ", truth.size(), " labels and ",
        predicted.size(), " predictions (none: nothing to match)");
  ClassClusters table;
  table.classes = *std::max_element(truth.begin(), truth.end()) + 1;
  table.num_old = num_old;
  const std::vector<int64_t> cluster_of_class = v2_class_to_cluster(truth, predicted);
  // The assignment covers every cluster id up to the largest label or prediction.
  table.column_of_cluster.assign(cluster_of_class.size(), -1);
  for (int64_t c = 0; c < table.classes; ++c) {
    table.column_of_cluster[static_cast<size_t>(cluster_of_class[static_cast<size_t>(c)])] = c;
    table.cluster_of_column.push_back(cluster_of_class[static_cast<size_t>(c)]);
  }
  std::vector<bool> holds(cluster_of_class.size(), false);
  for (int64_t k : predicted) holds[static_cast<size_t>(k)] = true;
  for (size_t k = 0; k < holds.size(); ++k)
    if (holds[k] && table.column_of_cluster[k] < 0) {
      table.column_of_cluster[k] = table.columns();
      table.cluster_of_column.push_back(static_cast<int64_t>(k));
    }
  table.counts.assign(static_cast<size_t>(table.classes), std::vector<int64_t>(table.cluster_of_column.size(), 0));
  for (size_t i = 0; i < truth.size(); ++i)
    ++table.counts[static_cast<size_t>(truth[i])][static_cast<size_t>(table.column_of(predicted[i]))];
  return table;
}

std::string column_name(const ClassClusters& table, int64_t column, const std::vector<std::string>& class_names) {
  if (column < table.classes && column < static_cast<int64_t>(class_names.size()))
    return class_names[static_cast<size_t>(column)];
  return "cluster " + std::to_string(table.cluster_of_column[static_cast<size_t>(column)]);
}

}  // namespace mcdl::tools
