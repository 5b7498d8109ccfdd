// A training run of ./mcdl_train: SimGCD, SimGCD + MCDL, or the k-means baseline, from the
// dataset on disk to the run directory (config.json, split.csv, metrics, predictions,
// checkpoints). Every epoch ends with the evaluation on the unlabelled training set and a
// checkpoint; a run can resume from its last checkpoint and, on the CPU backend, continues
// bit for bit as if it had not stopped.
#pragma once
#include <string>

#include "mcdl/cluster_accuracy.h"
#include "mcdl/train_config.h"

namespace mcdl {

struct RunSummary {
  ClusterAccuracy accuracy{};  // v2 All / Old / New of the last evaluation
  int64_t epochs_completed = 0;
  int64_t iterations = 0;
  double seconds = 0.0;
};

// Runs `config` (validated first). With `resume`, config.out must hold an earlier run: its
// config.json is used, and training continues from checkpoints/last.safetensors.
RunSummary run_training(const TrainConfig& config, bool resume);

}  // namespace mcdl
