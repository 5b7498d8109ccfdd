// The native weights file of a backbone: safetensors with the model configuration as JSON in
// the header's "__metadata__" entry "config" (written by mcdl_convert and mcdl_pretrain), so
// the file alone says which model to build.
#pragma once
#include <map>
#include <string>

#include "engine/tensor.h"
#include "io/safetensors.h"
#include "layers/vision_transformer.h"
#include "layers/vit_config.h"

namespace mcdl {

struct BackboneFile {
  ModelConfig config;                     // the backbone's configuration (head fields as stored)
  std::map<std::string, Tensor> tensors;  // DINO names, CPU
};

// The weights file's tensors and metadata, with the errors a user meets first said plainly: a
// missing file, or a PyTorch checkpoint given where its conversion belongs.
SafetensorsFile read_weights_safetensors(const std::string& path);
// Reads and checks the file; a missing or malformed "config" entry is an error that says how
// to produce a valid file (mcdl_convert).
BackboneFile load_backbone_file(const std::string& path);
// Writes a backbone's parameters with its configuration.
void save_backbone_file(const std::string& path, VisionTransformer& backbone);

}  // namespace mcdl
