#include "mcdl/run/trained_model.h"

#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "engine/error.h"
#include "io/safetensors.h"
#include "mcdl/run/frozen_backbone.h"
#include "mcdl/run/run_checkpoint.h"
#include "mcdl/run/run_start.h"

namespace fs = std::filesystem;

namespace mcdl {
namespace {

struct TrainingCheckpoint {
  std::string path;
  SafetensorsFile file;
  ModelConfig config;
  std::map<std::string, Tensor> model;  // the "model." tensors, unprefixed
};

TrainingCheckpoint read_training_checkpoint(const std::string& run_dir_or_file) {
  TrainingCheckpoint checkpoint;
  checkpoint.path = fs::is_directory(run_dir_or_file)
                        ? (fs::path(run_dir_or_file) / "checkpoints" / "last.safetensors").string()
                        : run_dir_or_file;
  const std::string& path = checkpoint.path;
  check(fs::exists(path), "checkpoint ", path, " does not exist (mcdl_train writes RUN_DIR/checkpoints/",
        "last.safetensors after each epoch)");
  checkpoint.file = load_safetensors(path);
  const auto config_entry = checkpoint.file.metadata.find("model_config");
  check(config_entry != checkpoint.file.metadata.end(), "checkpoint ", path,
        " has no 'model_config' entry in its header (not a checkpoint written by mcdl_train)");
  try {
    checkpoint.config = model_config_from_json(config_entry->second);
  } catch (const Error& e) {
    fail("checkpoint ", path, ": bad model configuration: ", e.what());
  }
  checkpoint.model = unprefixed("model.", checkpoint.file.tensors);
  return checkpoint;
}

// Loads `saved` into the model (whose backbone, under the model's names, is `backbone`): a full
// checkpoint as it is; one without the frozen blocks after rebuilding them from the run's
// settings as the trainer builds its model (seeded initialisation, then --weights, then freezing).
void load_saved(Module& model, VisionTransformer& backbone, const std::map<std::string, Tensor>& saved,
                const TrainingCheckpoint& checkpoint) {
  if (!checkpoint.file.metadata.count(frozen_backbone_key)) {
    try {
      model.load_parameters(saved);
    } catch (const Error& e) {
      fail("checkpoint ", checkpoint.path, ": ", e.what());
    }
    return;
  }
  const TrainConfig run =
      config_from_json(checkpoint_entry(checkpoint.file, checkpoint.path, "config"), "checkpoint " + checkpoint.path);
  model.initialize(run.seed);
  const BackboneSource source = backbone_source(run);
  if (!source.tensors.empty()) backbone.load_parameters(source.tensors);
  backbone.set_grad_from_block(first_trained_block(run, backbone.config().depth));
  load_trainable_state(model, backbone, saved, checkpoint.file, checkpoint.path, frozen_fingerprint(backbone),
                       frozen_source(run));
}

std::unique_ptr<VisionTransformer> backbone_of(const TrainingCheckpoint& checkpoint) {
  // The backbone's parameters are the model's without the "head." ones (layers/simgcd_model.h;
  // a GCD checkpoint keeps its head apart, as "projection_head.").
  std::map<std::string, Tensor> saved;
  for (const auto& [name, tensor] : checkpoint.model)
    if (name.rfind("head.", 0) != 0) saved.emplace(name, tensor);
  auto backbone = std::make_unique<VisionTransformer>(checkpoint.config.backbone);
  load_saved(*backbone, *backbone, saved, checkpoint);
  return backbone;
}

}  // namespace

VisionTransformer load_checkpoint_backbone(const std::string& run_dir_or_file) {
  return std::move(*backbone_of(read_training_checkpoint(run_dir_or_file)));
}

TrainedModel load_trained_model(const std::string& run_dir_or_file) {
  const TrainingCheckpoint checkpoint = read_training_checkpoint(run_dir_or_file);
  TrainedModel trained;
  trained.iterations = std::stoll(checkpoint_entry(checkpoint.file, checkpoint.path, "iterations"));
  if (checkpoint.config.has_head()) {
    trained.model = std::make_unique<SimGCDModel>(checkpoint.config);
    load_saved(*trained.model, trained.model->backbone, checkpoint.model, checkpoint);
  } else {
    trained.backbone = backbone_of(checkpoint);
  }
  return trained;
}

std::string run_directory_of(const std::string& run_dir_or_file) {
  return fs::is_directory(run_dir_or_file) ? run_dir_or_file
                                           : fs::path(run_dir_or_file).parent_path().parent_path().string();
}

}  // namespace mcdl
