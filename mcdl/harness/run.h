// The run harness of ./mcdl_train: one object runs any method of --method from the dataset on
// disk to the run directory (config.json, split.csv, classes.csv, metrics, predictions,
// checkpoints, the report's files). It owns what every method shares: the epoch loop with
// SimGCD's cosine learning rate, the loss terms' log and progress bar, the end-of-epoch scoring
// line, the validation columns, checkpoints after every epoch, --resume (on the CPU backend a
// resumed run continues bit for bit as if it had not stopped), stop requests and the summary.
// The method itself (mcdl/method/registry.h) plugs in behind mcdl/method/base_method.h, with
// MCDL (mcdl/method/mcdl.h) attached where --method says so.
#pragma once
#include <string>

#include "mcdl/run/run_summary.h"
#include "mcdl/run/train_config.h"

namespace mcdl {

// Runs `config` (validated first) into config.out. With `resume`, config.out holds an earlier
// run (pass its config.json's settings, see resume_config) and training continues from
// checkpoints/last.safetensors.
RunSummary run_training(const TrainConfig& config, bool resume);
// The saved configuration of the run in `run_dir` (its config.json), for resuming it.
TrainConfig resume_config(const std::string& run_dir);

}  // namespace mcdl
