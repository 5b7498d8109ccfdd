// labels.csv of a run directory: what each label of split.csv and predictions.csv stands for.
// Those labels are the GCD split's remapped ones (data/gcd_split.h: the old classes first, then
// the new ones), so a reader without the dataset (mcdl_report's pictures) needs this table to
// name the classes. One row per label: label,class_id,name,group with class_id the dataset's own
// class index, name the layout's name for it (empty where the layout names none: CUB, CIFAR, ...)
// and group old or new.
#pragma once
#include <string>

#include "data/dataset.h"

namespace mcdl {

// The table's text for `dataset` (its old_classes and new_classes lists fix the labels).
std::string labels_csv(const Dataset& dataset);

}  // namespace mcdl
