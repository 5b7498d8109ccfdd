// Checkpoints leave out the backbone's frozen blocks (for ViT-B/16, 344 MB of a 516 MB file,
// rewritten every epoch): on --resume and in mcdl_features they are rebuilt from where the run
// got them (--weights, or --model's seeded initialisation) and must match the fingerprint of
// their values that the checkpoint records. A checkpoint without one holds every parameter
// (written before checkpoints left the frozen blocks out) and still loads.
#pragma once
#include <map>
#include <string>

#include "io/safetensors.h"
#include "layers/module.h"
#include "layers/vision_transformer.h"
#include "mcdl/run/train_config.h"

namespace mcdl {

// The checkpoint metadata entry that holds the fingerprint.
inline constexpr const char* frozen_backbone_key = "frozen_backbone";

// FNV-1a (64-bit, over 8-byte words) of the names, shapes, dtypes and bytes of the backbone's
// parameters that do not train, as 16 hex digits.
std::string frozen_fingerprint(VisionTransformer& backbone);

// The model's parameters (state_dict names) without the backbone's frozen ones: what a checkpoint
// stores. `backbone` is the model itself or a part of it whose names are the model's.
std::map<std::string, Tensor> trainable_state(Module& model, VisionTransformer& backbone);

// Loads a checkpoint's parameters `saved` (state_dict names) into the model as built. With a
// fingerprint in the file, the frozen ones stay as built once `built_fingerprint` matches it, and
// every other parameter must be saved; without one, `saved` holds them all. `source` says where
// the frozen blocks came from, for the mismatch message.
void load_trainable_state(Module& model, VisionTransformer& backbone, const std::map<std::string, Tensor>& saved,
                          const SafetensorsFile& file, const std::string& path, const std::string& built_fingerprint,
                          const std::string& source);

// "--weights FILE" or "--model SPEC --seed N": where a run's frozen blocks come from.
std::string frozen_source(const TrainConfig& config);

}  // namespace mcdl
