// The models of a training run's checkpoint, for the tools that use a trained run
// (mcdl_features, mcdl_predict): RUN_DIR/checkpoints/last.safetensors (or a checkpoint file
// itself) as mcdl_train writes it, the model's parameters as "model.<name>" and its
// configuration as the "model_config" entry. Checkpoints without the frozen blocks get them
// rebuilt from the run's settings, exactly as on --resume (mcdl/run/frozen_backbone.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "layers/simgcd_model.h"
#include "layers/vision_transformer.h"

namespace mcdl {

// The backbone alone (the head, if any, left out).
VisionTransformer load_checkpoint_backbone(const std::string& run_dir_or_file);

// What a run's checkpoint predicts with (mcdl_predict): the whole SimGCD model of a simgcd or
// simgcd+mcdl run, or the backbone alone of a gcd or gcd+mcdl run (no classifier head: it
// predicts through its k-means centres, mcdl/run/cluster_centres.h).
struct TrainedModel {
  std::unique_ptr<SimGCDModel> model;           // a run with a classifier head
  std::unique_ptr<VisionTransformer> backbone;  // a run without one
  int64_t iterations = 0;                       // the training iterations the checkpoint records
};
TrainedModel load_trained_model(const std::string& run_dir_or_file);

// The run directory of a checkpoint argument: RUN_DIR itself, or RUN_DIR/checkpoints/FILE's.
std::string run_directory_of(const std::string& run_dir_or_file);

}  // namespace mcdl
