#include "data/gcd_split.h"

#include <algorithm>
#include <sstream>

#include "data/numpy_random.h"
#include "data/python_set_order.h"
#include "engine/error.h"
#include "io/durable_file.h"

namespace mcdl {
namespace {

// Remapped label of every class id (-1 for ids that are neither old nor new), after checking
// that the old and new lists together name each class of [0, K) exactly once.
std::vector<int64_t> class_remapping(const Dataset& dataset) {
  const int64_t k = dataset.num_classes;
  check(k > 0, "gcd split (", dataset.name, "): the dataset has no classes (num_classes ", k, ")");
  const auto total = static_cast<int64_t>(dataset.old_classes.size() + dataset.new_classes.size());
  check(total == k, "gcd split (", dataset.name, "): ", dataset.old_classes.size(), " old + ",
        dataset.new_classes.size(), " new classes, expected K = ", k);
  std::vector<int64_t> remap(static_cast<size_t>(k), -1);
  int64_t next = 0;
  for (const auto* list : {&dataset.old_classes, &dataset.new_classes}) {
    for (int64_t c : *list) {
      check(c >= 0 && c < k, "gcd split (", dataset.name, "): class ", c, " outside [0, ", k, ")");
      check(remap[static_cast<size_t>(c)] < 0, "gcd split (", dataset.name, "): class ", c, " listed twice");
      remap[static_cast<size_t>(c)] = next++;
    }
  }
  return remap;
}

std::vector<int64_t> ascending_complement(int64_t n, const std::vector<int64_t>& taken) {
  std::vector<bool> is_taken(static_cast<size_t>(n), false);
  for (int64_t i : taken) is_taken[static_cast<size_t>(i)] = true;
  std::vector<int64_t> rest;
  for (int64_t i = 0; i < n; ++i)
    if (!is_taken[static_cast<size_t>(i)]) rest.push_back(i);
  return rest;
}

void check_given_labelled(const Dataset& dataset, const GcdSplit& split) {
  std::vector<bool> seen(static_cast<size_t>(dataset.size()), false);
  for (int64_t i : dataset.given_labelled) {
    check(i >= 0 && i < dataset.size(), "gcd split (", dataset.name, "): labelled index ", i, " outside [0, ",
          dataset.size(), ")");
    check(!seen[static_cast<size_t>(i)], "gcd split (", dataset.name, "): labelled index ", i, " repeats");
    seen[static_cast<size_t>(i)] = true;
    const int64_t label = split.label[static_cast<size_t>(i)];
    check(label >= 0 && label < split.num_old_classes, "gcd split (", dataset.name, "): labelled image ",
          dataset.train[static_cast<size_t>(i)].path, " is not of an old class");
  }
}

}  // namespace

GcdSplit make_gcd_split(const Dataset& dataset, double prop_labelled) {
  check(prop_labelled >= 0.0 && prop_labelled <= 1.0, "gcd split (", dataset.name, "): labelled proportion ",
        prop_labelled, " outside [0, 1]");
  const std::vector<int64_t> remap = class_remapping(dataset);
  GcdSplit split;
  split.num_old_classes = static_cast<int64_t>(dataset.old_classes.size());
  split.num_classes = dataset.num_classes;
  split.label.reserve(dataset.train.size());
  for (const DatasetItem& item : dataset.train) {
    check(item.class_id >= -1 && item.class_id < dataset.num_classes, "gcd split (", dataset.name,
          "): image ", item.path, " has class ", item.class_id, " outside [0, ", dataset.num_classes, ")");
    split.label.push_back(item.class_id < 0 ? -1 : remap[static_cast<size_t>(item.class_id)]);
  }
  for (const DatasetItem& item : dataset.test) {
    check(item.class_id >= 0 && item.class_id < dataset.num_classes, "gcd split (", dataset.name, "): test image ",
          item.path, " has class ", item.class_id, " outside [0, ", dataset.num_classes, ")");
    split.test_label.push_back(remap[static_cast<size_t>(item.class_id)]);
  }

  if (!dataset.given_labelled.empty()) {
    check_given_labelled(dataset, split);
    split.labelled = dataset.given_labelled;
    split.unlabelled = ascending_complement(dataset.size(), split.labelled);
    return split;
  }

  // subsample_classes: the old-class images in train order; then subsample_instances.
  std::vector<int64_t> old_images;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    const int64_t label = split.label[static_cast<size_t>(i)];
    check(label >= 0, "gcd split (", dataset.name, "): image ", dataset.train[static_cast<size_t>(i)].path,
          " has no class; only a layout with given labelled images may have unknown classes");
    if (label < split.num_old_classes) old_images.push_back(i);
  }
  const auto num_old = static_cast<int64_t>(old_images.size());
  const auto num_labelled = static_cast<int64_t>(prop_labelled * static_cast<double>(num_old));  // int()
  for (int64_t pick : numpy_legacy_choice_without_replacement(0, num_old, num_labelled))
    split.labelled.push_back(old_images[static_cast<size_t>(pick)]);

  if (dataset.subset_order == Dataset::SubsetOrder::ascending) {
    std::sort(split.labelled.begin(), split.labelled.end());
    split.unlabelled = ascending_complement(dataset.size(), split.labelled);
  } else {
    split.unlabelled = python_set_difference_order(dataset.size(), split.labelled);
  }
  return split;
}

namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace

void write_split_csv(const std::string& path, const Dataset& dataset, const GcdSplit& split) {
  check(split.label.size() == dataset.train.size(), "write_split_csv: split of ", split.label.size(),
        " images for a dataset of ", dataset.size());
  std::ostringstream out;
  out << "id,path,label,role\n";
  for (const auto* part : {&split.labelled, &split.unlabelled}) {
    const char* role = part == &split.labelled ? "labelled" : "unlabelled";
    for (int64_t i : *part) {
      check(i >= 0 && i < dataset.size(), "write_split_csv: train index ", i, " outside [0, ", dataset.size(), ")");
      out << i << ',' << csv_field(dataset.train[static_cast<size_t>(i)].path) << ','
          << split.label[static_cast<size_t>(i)] << ',' << role << '\n';
    }
  }
  write_file_atomically(path, out.str());
}

}  // namespace mcdl
