// A training run of ./mcdl_train: SimGCD + MCDL, SimGCD, or the k-means baseline (the GCD
// baseline is mcdl/gcd_baseline.h, dispatched from run_training), from the
// dataset on disk to the run directory (config.json, split.csv, metrics, predictions,
// checkpoints). Every epoch ends with the evaluation on the unlabelled training set and a
// checkpoint; a run can resume from its last checkpoint and, on the CPU backend, continues
// bit for bit as if it had not stopped.
#pragma once
#include <cmath>
#include <string>

#include "mcdl/cluster_accuracy.h"
#include "mcdl/train_config.h"

namespace mcdl {

struct RunSummary {
  // v2 All / Old / New of the last evaluation on the unlabelled training images (transductive)
  // and on the test split (inductive); NaN where not scored.
  ClusterAccuracy accuracy{std::nan(""), std::nan(""), std::nan("")};
  ClusterAccuracy test_accuracy{std::nan(""), std::nan(""), std::nan("")};
  int64_t epochs_completed = 0;
  int64_t iterations = 0;
  double seconds = 0.0;
  bool interrupted = false;  // stopped by Ctrl-C or SIGTERM (mcdl/stop_request.h) before the end
};

// Runs `config` (validated first) into config.out. With `resume`, config.out holds an earlier
// run (pass its config.json's settings, see resume_config) and training continues from
// checkpoints/last.safetensors.
RunSummary run_training(const TrainConfig& config, bool resume);
// The saved configuration of the run in `run_dir` (its config.json), for resuming it.
TrainConfig resume_config(const std::string& run_dir);

}  // namespace mcdl
