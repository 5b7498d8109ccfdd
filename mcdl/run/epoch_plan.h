// An epoch of SimGCD's sampler as batches of training images, and each batch's labels as the
// losses see them (the run harness, mcdl/harness/run.h).
#pragma once
#include <cstdint>
#include <vector>

#include "data/sampler.h"
#include "mcdl/run/train_config.h"
#include "mcdl/run/training_data.h"

namespace mcdl {

// One epoch of the SimGCD sampler: its draws and the batches of training images (drop_last).
struct EpochPlan {
  std::vector<SampledItem> draws;
  std::vector<std::vector<int64_t>> batches;  // train indices
};
EpochPlan plan_epoch(const TrainConfig& config, const TrainingData& data, int64_t epoch);
// Batch `batch` of the plan: labels (−1 for unlabelled samples: their ground truth never reaches
// a loss), labelled flags, and each unlabelled sample's memory-bank slot (−1 when labelled).
struct BatchLabels {
  std::vector<int64_t> labels;
  std::vector<uint8_t> labelled;
  std::vector<int64_t> bank_index;
};
BatchLabels batch_labels(const EpochPlan& plan, const TrainingData& data, int64_t batch);

}  // namespace mcdl
