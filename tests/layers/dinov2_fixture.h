// The DINOv2 fixtures of tools/make_dinov2_fixtures.py (tests/fixtures/dinov2/): the reference
// model's configuration as an engine spec, the files' paths and PyTorch's reference values.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "io/safetensors.h"
#include "layers/dino_checkpoint.h"
#include "layers/vit_config.h"

namespace mcdl::testing {

// Patch 7, width 24, depth 2, 3 heads, MLP ratio 2, LayerScale, the position embedding learned
// at 35 px (5x5); img is the input size the converted file describes.
inline VitConfig dinov2_fixture_config(int64_t registers, int64_t img = 28) {
  return parse_model_config("img=" + std::to_string(img) +
                            ",patch=7,dim=24,depth=2,heads=3,mlp_ratio=2,layer_scale=true,pos_img=35,registers=" +
                            std::to_string(registers))
      .backbone;
}

// tests/fixtures/dinov2/<name>; __FILE__ is relative to the repository root, where tests run.
inline std::string dinov2_fixture_path(const std::string& name) {
  namespace fs = std::filesystem;
  return (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "dinov2" / name).string();
}

inline const std::map<std::string, Tensor>& dinov2_reference() {
  static const std::map<std::string, Tensor> reference =
      load_safetensors(dinov2_fixture_path("reference.safetensors")).tensors;
  return reference;
}

// A fixture file converted for the fixture's configuration with `registers` registers.
inline BackboneConversion convert_dinov2_fixture(const std::string& file, int64_t registers) {
  return convert_dino_backbone(read_checkpoint_tensors(dinov2_fixture_path(file)).tensors,
                               dinov2_fixture_config(registers));
}

}  // namespace mcdl::testing
