#include "mcdl/run/run_checkpoint.h"

#include <cstdio>

#include "engine/error.h"

namespace mcdl {

std::map<std::string, Tensor> prefixed(const std::string& prefix, const std::map<std::string, Tensor>& tensors) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : tensors) out[prefix + name] = t;
  return out;
}

namespace {

template <class T>
std::map<std::string, T> without_prefix(const std::string& prefix, const std::map<std::string, T>& tensors) {
  std::map<std::string, T> out;
  for (const auto& [name, t] : tensors)
    if (name.compare(0, prefix.size(), prefix) == 0) out.emplace(name.substr(prefix.size()), t);
  return out;
}

}  // namespace

std::map<std::string, Tensor> unprefixed(const std::string& prefix, const std::map<std::string, Tensor>& tensors) {
  return without_prefix(prefix, tensors);
}

std::map<std::string, StoredTensor> unprefixed(const std::string& prefix,
                                               const std::map<std::string, StoredTensor>& tensors) {
  return without_prefix(prefix, tensors);
}

bool read_in_part(const std::string& name) { return name == "bank_weak.probs" || name == "bank_strong.probs"; }

std::string checkpoint_entry(const SafetensorsFile& file, const std::string& path, const char* key) {
  auto it = file.metadata.find(key);
  check(it != file.metadata.end(), "checkpoint ", path, " has no '", key, "' entry (not written by mcdl_train?)");
  return it->second;
}

std::map<std::string, std::string> checkpoint_metadata(const TrainConfig& config, const RunProgress& progress,
                                                       int64_t epochs_completed, const std::string& model_config_json) {
  return {{"epochs_completed", std::to_string(epochs_completed)},
          {"iterations", std::to_string(progress.iterations)},
          {"config", config_to_json(config)},
          {"model_config", model_config_json}};
}

void resume_progress(const SafetensorsFile& file, const RunDirectory& run, const TrainConfig& config,
                     RunProgress& progress) {
  progress.start_epoch = progress.epochs_completed =
      std::stoll(checkpoint_entry(file, run.last_checkpoint(), "epochs_completed"));
  progress.iterations = std::stoll(checkpoint_entry(file, run.last_checkpoint(), "iterations"));
  run.truncate_metrics(progress.start_epoch);
  std::fprintf(stderr, "resuming %s after epoch %lld\n", run.path().c_str(),
               static_cast<long long>(progress.start_epoch));
  if (progress.start_epoch >= config.epochs) progress.stop = true;
}

}  // namespace mcdl
