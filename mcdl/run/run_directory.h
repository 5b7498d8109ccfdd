// A run directory: config.json, split.csv, metrics.jsonl + metrics.csv (one row per epoch),
// predictions.csv and checkpoints/. Every file is written to a temporary name, fsynced and
// renamed, so a crash never leaves a half-written file; metrics are appended a whole row at a
// time. Every write is checked (io/durable_file.h): a full disk or read-only directory ends the
// run with a message and leaves the last good checkpoint as it was.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"
#include "io/safetensors.h"  // TensorPieces

namespace mcdl {

using MetricsRow = std::vector<std::pair<std::string, double>>;  // ordered: the first is "epoch"
// The value of column `name` in a row (an error names the missing column).
double metric_value(const MetricsRow& row, const std::string& name);

class RunDirectory {
 public:
  // Creates it (and checkpoints/) and probes that it can be written (a test file written, fsynced
  // and removed); throws naming the directory and the OS error when not. Not `writer` (the ranks
  // of a multi-process run other than rank 0): it only reads, and every write is skipped.
  explicit RunDirectory(std::string path, bool writer = true);
  const std::string& path() const { return path_; }
  bool writes() const { return writer_; }
  std::string file(const std::string& name) const;

  void write_text(const std::string& name, const std::string& text) const;  // atomic replace
  // Appends a row to metrics.jsonl and metrics.csv (header written with the first row).
  void append_metrics(const MetricsRow& row) const;
  // Drops every metrics row with epoch ≥ `epoch` (a resumed run redoes those epochs).
  void truncate_metrics(int64_t epoch) const;

  std::string last_checkpoint() const;  // checkpoints/last.safetensors
  bool has_checkpoint() const;
  // Writes checkpoints/last.safetensors atomically (`pieces`: tensors handed over as they are
  // written, io/safetensors.h), and with keep_every > 0 also keeps a copy as
  // checkpoints/epoch_<N>.safetensors when (epoch + 1) % keep_every == 0.
  void save_checkpoint(const std::map<std::string, Tensor>& tensors, const std::map<std::string, std::string>& metadata,
                       int64_t epoch, int64_t keep_every, const std::map<std::string, TensorPieces>& pieces = {}) const;

 private:
  std::string path_;
  bool writer_;
};

}  // namespace mcdl
