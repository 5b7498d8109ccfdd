#include "layers/backbone_file.h"

#include <filesystem>

#include "engine/error.h"
#include "io/file_handle.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"

namespace mcdl {

SafetensorsFile read_weights_safetensors(const std::string& path) {
  check(std::filesystem::exists(path), "weights file ", path, " does not exist (convert a checkpoint with ",
        "./mcdl_convert IN.pth -o OUT.safetensors, or pretrain one with ./mcdl_pretrain)");
  check(!looks_like_torch_checkpoint(read_file_head(path, 8)), "weights file ", path,
        " is a PyTorch checkpoint (torch.save's format); the engine reads its own safetensors weights: convert it ",
        "first with ./mcdl_convert ", path, " -o weights.safetensors (for DINOv2 add --config with the model's ",
        "name, e.g. vit_base_patch14_dinov2)");
  return load_safetensors(path);
}

BackboneFile load_backbone_file(const std::string& path) {
  SafetensorsFile file = read_weights_safetensors(path);
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
