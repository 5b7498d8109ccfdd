// A training run's checkpoint beyond its tensors: the names under which each part's tensors are
// stored, the metadata every method writes, and reading the progress back on --resume.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "engine/tensor.h"
#include "io/safetensors.h"
#include "mcdl/run/run_directory.h"
#include "mcdl/run/run_progress.h"
#include "mcdl/run/train_config.h"

namespace mcdl {

// "model.blocks.0..." for a part's tensors in the checkpoint, and the part's tensors back.
std::map<std::string, Tensor> prefixed(const std::string& prefix, const std::map<std::string, Tensor>& tensors);
std::map<std::string, Tensor> unprefixed(const std::string& prefix, const std::map<std::string, Tensor>& tensors);
std::map<std::string, StoredTensor> unprefixed(const std::string& prefix,
                                               const std::map<std::string, StoredTensor>& tensors);
// What --resume leaves in the checkpoint's file to read in part: the memory banks' probabilities,
// of which each process reads only its block (mcdl/method/memory_bank.h).
bool read_in_part(const std::string& name);
// A checkpoint's metadata entry (an error names the file and the missing key).
std::string checkpoint_entry(const SafetensorsFile& file, const std::string& path, const char* key);

// The metadata every method's checkpoint carries besides its tensors.
std::map<std::string, std::string> checkpoint_metadata(const TrainConfig& config, const RunProgress& progress,
                                                       int64_t epochs_completed, const std::string& model_config_json);
// Reads a checkpoint's progress back, drops the metrics rows of the epochs to be redone and says
// where the run resumes.
void resume_progress(const SafetensorsFile& file, const RunDirectory& run, const TrainConfig& config,
                     RunProgress& progress);

}  // namespace mcdl
