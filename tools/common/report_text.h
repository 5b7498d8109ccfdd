// The words and number formats of mcdl_report's pictures and page: the method's and dataset's
// names as people write them, a label for each metrics.csv column, and each column's values as
// people read them (accuracies as percentages with one decimal, counts as integers, loss terms
// with four decimals as on the console, seconds with one).
#pragma once
#include <string>

namespace mcdl::tools {

// "SimGCD + MCDL" for simgcd+mcdl, ...; an unknown name as it is.
std::string method_title(const std::string& method);
// "Fashion-MNIST" for fmnist, "CUB-200-2011" for cub, "a folder dataset" for folder, ...
std::string dataset_title(const std::string& dataset);

// Whether a metrics.csv column is a fraction shown as a percentage (all, old, new, test_*, val_*,
// the buckets' pseudo-label accuracy and precision).
bool is_fraction_column(const std::string& column);
// The column's label in legends and tables: "All", "test New", "validation Old", "high bucket
// (images)", "pseudo acc., high"; a loss term by its console name.
std::string column_label(const std::string& column);
// A column's value as text: "55.0%" for a fraction, "212" for a count, "0.05000" for lr and
// "4.1234" for a loss term (as the console prints them), "1.4 s" for seconds; "–" for a missing
// value (NaN).
std::string column_value(const std::string& column, double value);

// 0.55 as "55.0%"; NaN as "–".
std::string percent_text(double fraction);

}  // namespace mcdl::tools
