#include "mcdl/run/run_directory.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"
#include "io/durable_file.h"
#include "io/safetensors.h"

namespace mcdl {

double metric_value(const MetricsRow& row, const std::string& name) {
  for (const auto& [column, value] : row)
    if (column == name) return value;
  fail("metrics row: no column '", name, "'");
}


namespace fs = std::filesystem;

namespace {
constexpr const char* kWhatToDo = "choose another directory with --out, or make room in this one, then run again";
}

RunDirectory::RunDirectory(std::string path, bool writer) : path_(std::move(path)), writer_(writer) {
  check(!path_.empty(), "run directory: no path given (use --out RUN_DIR)");
  if (!writer_) return;
  std::error_code ec;
  fs::create_directories(path_, ec);
  check(!ec, "cannot create the run directory ", path_, ": ", ec.message(), "; ", kWhatToDo);
  // Before the data is loaded and the model built: a full disk or read-only directory is found
  // now, not at the first checkpoint hours later.
  probe_writable_directory(path_, kWhatToDo);
  fs::create_directories(fs::path(path_) / "checkpoints", ec);
  check(!ec, "cannot create ", path_, "/checkpoints: ", ec.message(), "; ", kWhatToDo);
}

std::string RunDirectory::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

void RunDirectory::write_text(const std::string& name, const std::string& text) const {
  if (writer_) write_file_atomically(file(name), text);
}

namespace {

std::string format_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream os;
  os.precision(8);
  os << v;
  return os.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

void RunDirectory::append_metrics(const MetricsRow& row) const {
  if (!writer_) return;
  nlohmann::ordered_json j;
  for (const auto& [key, value] : row) j[key] = std::isfinite(value) ? nlohmann::ordered_json(value) : nullptr;
  std::string csv_header, csv_row;
  for (size_t i = 0; i < row.size(); ++i) {
    csv_header += (i ? "," : "") + row[i].first;
    csv_row += (i ? "," : "") + format_number(row[i].second);
  }
  const std::string csv_path = file("metrics.csv");
  const bool new_csv = !fs::exists(csv_path) || fs::file_size(csv_path) == 0;
  // Both files or neither: a failed append leaves no half row in either.
  append_to_files({{file("metrics.jsonl"), j.dump() + "\n"},
                   {csv_path, (new_csv ? csv_header + "\n" : std::string()) + csv_row + "\n"}});
}

void RunDirectory::truncate_metrics(int64_t epoch) const {
  if (!writer_) return;
  const std::string jsonl_path = file("metrics.jsonl");
  if (!fs::exists(jsonl_path)) {  // metrics.csv is rebuilt from the jsonl rows: none, no rows
    fs::remove(file("metrics.csv"));
    return;
  }
  std::istringstream lines(read_file(jsonl_path));
  std::string line, kept_jsonl, kept_csv;
  for (int64_t n = 0; std::getline(lines, line); ++n) {
    if (line.empty()) continue;
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("epoch") || !j["epoch"].is_number()) continue;
    if (j["epoch"].get<double>() >= static_cast<double>(epoch)) continue;
    kept_jsonl += line + "\n";
    std::string header, row;
    for (auto& [key, value] : j.items()) {
      header += (header.empty() ? "" : ",") + key;
      row += (row.empty() ? "" : ",") + (value.is_null() ? std::string("nan") : format_number(value.get<double>()));
    }
    if (kept_csv.empty()) kept_csv = header + "\n";
    kept_csv += row + "\n";
  }
  write_text("metrics.jsonl", kept_jsonl);
  write_text("metrics.csv", kept_csv);
}

std::string RunDirectory::last_checkpoint() const { return file("checkpoints/last.safetensors"); }

bool RunDirectory::has_checkpoint() const { return fs::exists(last_checkpoint()); }

void RunDirectory::save_checkpoint(const std::map<std::string, Tensor>& tensors,
                                   const std::map<std::string, std::string>& metadata, int64_t epoch,
                                   int64_t keep_every, const std::map<std::string, TensorPieces>& pieces) const {
  if (!writer_) return;
  try {
    save_safetensors(last_checkpoint(), tensors, metadata, pieces);
    if (keep_every > 0 && (epoch + 1) % keep_every == 0)
      copy_file_atomically(last_checkpoint(), file("checkpoints/epoch_" + std::to_string(epoch + 1) + ".safetensors"));
  } catch (const Error& e) {
    // The writes went through temporary files: whatever checkpoint there was is still whole.
    const std::string next = has_checkpoint() ? "The last good checkpoint, " + last_checkpoint() +
                                                    ", is intact: once there is room, continue with --resume " + path_
                                              : "No checkpoint was written yet: once there is room, run again";
    fail("the checkpoint after epoch ", epoch + 1, " was not saved, so the run stops: ", e.what(), ". ", next);
  }
}

}  // namespace mcdl
