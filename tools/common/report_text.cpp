#include "tools/common/report_text.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace mcdl::tools {
namespace {

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

bool starts_with(const std::string& text, const std::string& start) { return text.rfind(start, 0) == 0; }

std::string formatted(const char* format, double value) {
  char text[48];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// all, old, new with an optional _v2b: "All", "Old", "New" (" (balanced)").
std::string accuracy_part(const std::string& column) {
  const bool balanced = ends_with(column, "_v2b");
  const std::string part = balanced ? column.substr(0, column.size() - 4) : column;
  const std::string word = part == "all" ? "All" : part == "old" ? "Old" : part == "new" ? "New" : "";
  return word.empty() ? "" : word + (balanced ? " (balanced)" : "");
}

}  // namespace

std::string method_title(const std::string& method) {
  static const std::map<std::string, std::string> titles = {{"simgcd+mcdl", "SimGCD + MCDL"},
                                                            {"simgcd", "SimGCD"},
                                                            {"gcd", "GCD"},
                                                            {"gcd+mcdl", "GCD + MCDL"},
                                                            {"kmeans", "k-means"}};
  const auto found = titles.find(method);
  return found == titles.end() ? method : found->second;
}

std::string dataset_title(const std::string& dataset) {
  static const std::map<std::string, std::string> titles = {
      {"cub", "CUB-200-2011"},         {"scars", "Stanford Cars"}, {"aircraft", "FGVC-Aircraft"},
      {"herbarium19", "Herbarium 19"}, {"cifar10", "CIFAR-10"},    {"cifar100", "CIFAR-100"},
      {"imagenet100", "ImageNet-100"}, {"imagenet1k", "ImageNet-1K"}, {"fmnist", "Fashion-MNIST"}, {"folder", "a folder dataset"}};
  const auto found = titles.find(dataset);
  return found == titles.end() ? dataset : found->second;
}

bool is_fraction_column(const std::string& column) {
  if (ends_with(column, "_pseudo_acc") || ends_with(column, "_precision") || ends_with(column, "_conf_acc") ||
      ends_with(column, "_share") || starts_with(column, "labelled_"))
    return true;
  for (const char* prefix : {"", "test_", "val_"})
    if (starts_with(column, prefix) && !accuracy_part(column.substr(std::string(prefix).size())).empty()) return true;
  return false;
}

std::string column_label(const std::string& column) {
  if (const std::string word = accuracy_part(column); !word.empty()) return word;
  if (starts_with(column, "test_") && !accuracy_part(column.substr(5)).empty()) return "test " + accuracy_part(column.substr(5));
  if (starts_with(column, "val_") && !accuracy_part(column.substr(4)).empty())
    return "validation " + accuracy_part(column.substr(4));
  static const std::map<std::string, std::string> labels = {
      {"epoch", "epoch"},
      {"lr", "learning rate"},
      {"loss", "loss (total)"},
      {"high", "high bucket (images)"},
      {"medium", "medium bucket (images)"},
      {"low", "low bucket (images)"},
      {"high_pseudo_acc", "pseudo acc., high"},
      {"medium_pseudo_acc", "pseudo acc., medium"},
      {"val_high", "validation images in the high bucket"},
      {"val_medium", "validation images in the medium bucket"},
      {"val_high_precision", "val. precision, high"},
      {"val_medium_precision", "val. precision, medium"},
      {"high_conf_acc", "pseudo acc., as many by confidence as high"},
      {"medium_conf_acc", "pseudo acc., as many by confidence as medium"},
      {"val_high_conf_precision", "val. precision, as many by confidence as high"},
      {"val_medium_conf_precision", "val. precision, as many by confidence as medium"},
      {"high_clusters", "clusters in the high bucket"},
      {"high_top_share", "largest cluster's share of the high bucket"},
      {"high_old_share", "known classes' share of the high bucket"},
      {"bank_full", "unlabelled images with a full window"},
      {"labelled_weak_acc", "labelled rows, weak view"},
      {"labelled_strong_acc", "labelled rows, strong view"},
      {"iterations", "iterations so far"},
      {"train_seconds", "training time"},
      {"eval_seconds", "evaluation time"},
      {"eval_features_seconds", "evaluation: the model's forward"},
      {"eval_cluster_seconds", "evaluation: clustering and matching"},
      {"eval_report_seconds", "evaluation: reports and files"},
      {"seconds", "epoch time"}};
  const auto found = labels.find(column);
  return found == labels.end() ? column : found->second;
}

std::string percent_text(double fraction) {
  return std::isfinite(fraction) ? formatted("%.1f%%", 100.0 * fraction) : "–";
}

std::string column_value(const std::string& column, double value) {
  if (!std::isfinite(value)) return "–";
  if (is_fraction_column(column)) return percent_text(value);
  if (column == "epoch") return formatted("%.0f", value + 1);  // 1-based, as the console's "epoch 3/10"
  if (column == "lr") return formatted("%.5f", value);  // as the console prints it
  if (ends_with(column, "seconds")) return formatted("%.1f s", value);
  if (value == std::floor(value) && std::abs(value) < 1e15) return formatted("%.0f", value);  // counts
  return formatted("%.4f", value);  // loss terms, as the console prints them
}

}  // namespace mcdl::tools
