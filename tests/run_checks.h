// The checks of the end-to-end run tests on the coloured squares: a run learnt the classes; a run
// stopped by --max-iters and resumed from its checkpoint ends exactly where the uninterrupted run
// ends (checkpoint tensors bit for bit, every metrics column but the timing, the predictions).
#pragma once
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "mcdl/run/train_config.h"
#include "mcdl/harness/run.h"
#include "tests/synthetic_folder_dataset.h"

namespace mcdl::testing {

// A run on the squares (216 images at batch 32: 6 iterations an epoch) ran all `epochs` and
// clusters old and new classes well above chance (1/6).
inline void check_learnt_squares(const RunSummary& summary, int64_t epochs) {
  CHECK(summary.epochs_completed == epochs);
  CHECK(summary.iterations == epochs * 6);
  CHECK(summary.accuracy.all > 0.6);
  CHECK(summary.accuracy.new_classes > 0.4);
}

// The two checkpoints hold the same tensors, bit for bit.
inline void check_same_checkpoints(const std::filesystem::path& a_file, const std::filesystem::path& b_file) {
  const SafetensorsFile a = load_safetensors(a_file.string()), b = load_safetensors(b_file.string());
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    INFO(name);
    REQUIRE(b.tensors.count(name) == 1);
    const Tensor& u = b.tensors.at(name);
    REQUIRE(t.dtype() == u.dtype());
    REQUIRE(t.shape() == u.shape());
    CHECK(std::memcmp(t.raw_data(), u.raw_data(), t.nbytes()) == 0);
  }
}

// metrics.csv as column name → the rows' cells.
inline std::map<std::string, std::vector<std::string>> metrics_columns(const std::string& csv) {
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  std::vector<std::string> names;
  std::istringstream head(header);
  for (std::string name; std::getline(head, name, ',');) names.push_back(name);
  std::map<std::string, std::vector<std::string>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream cells(line);
    std::string cell;
    for (size_t c = 0; std::getline(cells, cell, ','); ++c) out[names.at(c)].push_back(cell);
  }
  return out;
}

// A metrics.csv line (header or row) without the timing columns that end it (train_seconds,
// eval_seconds, eval_features_seconds, eval_cluster_seconds, eval_report_seconds, seconds), which
// differ from run to run.
inline std::string without_timing(const std::string& line) {
  constexpr int timing_columns = 6;
  size_t end = line.size();
  for (int column = 0; column < timing_columns && end != std::string::npos && end > 0; ++column)
    end = line.rfind(',', end - 1);
  return line.substr(0, end);
}

// A metrics.csv without its timing columns.
inline std::string metrics_without_timing(const std::filesystem::path& file) {
  std::istringstream in(read_text(file));
  std::string out;
  for (std::string line; std::getline(in, line);) out += without_timing(line) + "\n";
  return out;
}

// Runs `config` into base/whole, then into base/parts stopped after `max_iters` iterations and
// resumed there, and checks that both end alike.
inline void check_resume_matches_whole_run(TrainConfig config, const std::filesystem::path& base, int64_t max_iters) {
  std::filesystem::remove_all(base);
  config.out = (base / "whole").string();
  run_training(config, false);
  config.out = (base / "parts").string();
  config.max_iters = max_iters;
  run_training(config, false);
  TrainConfig resumed = resume_config(config.out);
  resumed.max_iters = 0;
  CHECK(run_training(resumed, true).epochs_completed == config.epochs);

  check_same_checkpoints(base / "whole/checkpoints/last.safetensors", base / "parts/checkpoints/last.safetensors");
  CHECK(metrics_without_timing(base / "whole/metrics.csv") == metrics_without_timing(base / "parts/metrics.csv"));
  CHECK(read_text(base / "whole/predictions.csv") == read_text(base / "parts/predictions.csv"));
  std::filesystem::remove_all(base);
}

}  // namespace mcdl::testing
