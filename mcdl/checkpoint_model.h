// The models of a training run's checkpoint, for the tools that use a trained run
// (mcdl_features, mcdl_predict): RUN_DIR/checkpoints/last.safetensors (or a checkpoint file
// itself) as mcdl_train writes it, the model's parameters as "model.<name>" and its
// configuration as the "model_config" entry. Checkpoints without the frozen blocks get them
// rebuilt from the run's settings, exactly as on --resume (mcdl/frozen_backbone.h).
#pragma once
#include <memory>
#include <string>

#include "layers/simgcd_model.h"
#include "layers/vision_transformer.h"

namespace mcdl {

// The backbone alone (the head, if any, left out).
VisionTransformer load_checkpoint_backbone(const std::string& run_dir_or_file);

// The whole SimGCD model of a simgcd or simgcd+mcdl run (a GCD run has no classifier: an error
// says so).
std::unique_ptr<SimGCDModel> load_checkpoint_model(const std::string& run_dir_or_file);

}  // namespace mcdl
