// confusion.svg of mcdl_report: a row per class (its name, old classes above a red line), a
// column per cluster (named by its Hungarian-matched class, the matched ones first so that the
// diagonal holds each class's share in its own cluster), each cell shaded by the share of the
// class's images in the cluster (white 0% → dark blue 100%, with the number where the cell is
// large enough, and a tooltip everywhere), axis titles and a colour legend.
#pragma once
#include <string>
#include <vector>

#include "tools/common/class_clusters.h"

namespace mcdl::tools {

std::string confusion_svg(const ClassClusters& table, const std::vector<std::string>& class_names);

}  // namespace mcdl::tools
