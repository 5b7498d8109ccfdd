// The sections of report.html (tools/common/run_report.h) that come from metrics.csv and
// config.json: the title, the accuracy table of the last scored epoch (percentages, or the
// reason there is nothing to score), the last epoch's other numbers, every epoch's numbers and
// the settings. Epochs are 1-based, as on the console ("epoch 3/10") and in the charts.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tools/common/csv_table.h"

namespace mcdl::tools {

// "SimGCD + MCDL on Fashion-MNIST" from config.json's method and dataset ("Run DIR" without them).
std::string run_title(const nlohmann::ordered_json& config, const std::string& run_dir);

// Whether the images a row of the accuracy table scores have known labels: from the run's
// predictions.csv (unlabelled) and test_predictions.csv (test); nothing where the file is missing.
struct LabelsKnown {
  std::optional<bool> unlabelled, test;
};

// "Accuracy after epoch N of M": a row per scored set (unlabelled, test, validation, and their
// balanced v2b where present), All / Old / New as percentages with one decimal.
std::string accuracy_section(const CsvTable& metrics, int64_t planned_epochs, const LabelsKnown& labels);
// The last row's other columns (loss terms, learning rate, buckets, times), labelled and formatted.
std::string last_epoch_section(const CsvTable& metrics, int64_t planned_epochs);
// Every row, every column, formatted, in a collapsed <details>.
std::string every_epoch_section(const CsvTable& metrics);
// config.json's keys and values, in its order.
std::string settings_section(const nlohmann::ordered_json& config);

// A metrics.csv field as a number (NaN where empty or not a number).
double metric_value(const std::string& text);

}  // namespace mcdl::tools
