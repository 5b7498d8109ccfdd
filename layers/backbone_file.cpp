#include "layers/backbone_file.h"

#include <filesystem>

#include "engine/error.h"
#include "io/safetensors.h"

namespace mcdl {

BackboneFile load_backbone_file(const std::string& path) {
  check(std::filesystem::exists(path), "weights file ", path, " does not exist (convert a checkpoint with ",
        "./mcdl_convert IN.pth -o OUT.safetensors, or pretrain one with ./mcdl_pretrain)");
  SafetensorsFile file = load_safetensors(path);
  auto it = file.metadata.find("config");
  check(it != file.metadata.end(), "weights file ", path, " has no model configuration in its header; ",
        "files written by ./mcdl_convert and ./mcdl_pretrain have one (re-convert the checkpoint)");
  BackboneFile out;
  try {
    out.config = model_config_from_json(it->second);
  } catch (const Error& e) {
    fail("weights file ", path, ": bad model configuration: ", e.what());
  }
  out.tensors = std::move(file.tensors);
  return out;
}

void save_backbone_file(const std::string& path, VisionTransformer& backbone) {
  ModelConfig config;
  config.backbone = backbone.config();
  config.head.num_classes = 0;
  save_safetensors(path, backbone.state_dict(), {{"config", model_config_to_json(config)}});
}

}  // namespace mcdl
