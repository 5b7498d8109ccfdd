// The start of a training run (the run harness, mcdl/harness/run.h): where the backbone
// comes from, the first lines and files of the run directory, and the training loader's
// settings.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/loader.h"
#include "engine/device.h"
#include "engine/tensor.h"
#include "layers/vit_config.h"
#include "mcdl/evaluation/evaluation_set.h"
#include "mcdl/run/run_directory.h"
#include "mcdl/run/train_config.h"
#include "mcdl/run/training_data.h"

namespace mcdl {

// The backbone of a run: --weights FILE (configuration and tensors), or a fresh --model SPEC
// (no tensors); the message of neither says how to get DINO's weights.
struct BackboneSource {
  VitConfig config;
  std::map<std::string, Tensor> tensors;  // empty: initialise from the seed
};
BackboneSource backbone_source(const TrainConfig& config);
// --grad-from-block, −1 meaning the last block, checked against the depth.
int64_t first_trained_block(const TrainConfig& config, int64_t depth);

// The start of a run: "cub: 5994 training images, 200 classes (100 old): 1498 labelled, 4496
// unlabelled" on stderr (the images the run reads: those --skip-bad-images dropped are counted
// apart), config.json (on resume: with the overrides given), labels.csv (what each label means:
// data/label_names.h) and, for a new run, split.csv.
void begin_run(const TrainConfig& config, const TrainingData& data, const RunDirectory& run, bool resume);
// Loader threads: --workers, or automatic (none on the CPU backend, whose model uses every
// core; all cores but one with a GPU).
int64_t loader_workers(const TrainConfig& config, Device device);
LoaderOptions train_loader_options(const TrainConfig& config, const TrainingData& data, Device device,
                                   std::vector<ViewKind> views);
// The test-transform settings of an evaluation set of the run's images (evaluation, features).
EvaluationOptions evaluation_options(const TrainConfig& config, const TrainingData& data, Device device);

}  // namespace mcdl
