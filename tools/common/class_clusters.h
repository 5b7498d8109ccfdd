// The classes of one evaluation against its predicted clusters, for mcdl_report's pictures: how
// many images of each class fell in each cluster, and which cluster the v2 (Hungarian) match
// gives each class, so that a cluster can be named by its class and the matrix read along its
// diagonal.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcdl::tools {

struct ClassClusters {
  int64_t classes = 0;  // rows: the labels 0..classes-1 (old classes first)
  int64_t num_old = 0;  // labels below it are old (known) classes
  // Columns: the matched cluster of each class in class order (column c is class c's cluster),
  // then the other clusters that hold an image, by id.
  std::vector<int64_t> cluster_of_column;
  std::vector<std::vector<int64_t>> counts;  // [class][column]: images of the class in the cluster
  std::vector<int64_t> column_of_cluster;    // per cluster id up to the largest: its column, or −1

  int64_t columns() const { return static_cast<int64_t>(cluster_of_column.size()); }
  // The column of a cluster, −1 for a cluster that holds no image of known label.
  int64_t column_of(int64_t cluster) const;
  int64_t class_total(int64_t label) const;
};

// From the images of known label: truth[i] ≥ 0 their labels, predicted[i] their clusters; labels
// below num_old are old classes.
ClassClusters match_classes(const std::vector<int64_t>& truth, const std::vector<int64_t>& predicted, int64_t num_old);

// A column's name: its class's name for a matched column ("Coat"), else "cluster <id>".
std::string column_name(const ClassClusters& table, int64_t column, const std::vector<std::string>& class_names);

}  // namespace mcdl::tools
