// mcdl_convert: a DINO or DINOv2 ViT backbone checkpoint (PyTorch .pth, zip or legacy; DINO full
// checkpoint; Hugging Face ViTModel or Dinov2Model; safetensors) -> the engine's safetensors weights file.
// The conversion itself is layers/dino_checkpoint.h; this is argument parsing and the summary.
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "layers/dino_checkpoint.h"
#include "layers/vit_config.h"

namespace {

constexpr const char* kUsage =
    "usage: mcdl_convert IN -o OUT.safetensors [--config SPEC]\n"
    "\n"
    "Converts DINO or DINOv2 ViT backbone weights to the engine's safetensors file (DINO's\n"
    "parameter names, f32, the model configuration in the metadata).\n"
    "\n"
    "  IN             a torch.save checkpoint (zip or legacy format), e.g. DINO's\n"
    "                 dino_vitbase16_pretrain.pth, a DINO full checkpoint (the 'teacher' is used),\n"
    "                 a Hugging Face ViTModel pytorch_model.bin, DINOv2's dinov2_vitb14_pretrain.pth\n"
    "                 or dinov2_vitb14_reg4_pretrain.pth (also vits14), a Hugging Face Dinov2Model\n"
    "                 model.safetensors (facebook/dinov2-base, facebook/dinov2-with-registers-base),\n"
    "                 or another safetensors file\n"
    "  -o, --output   the file to write\n"
    "  --config SPEC  the backbone configuration (default vit_base_patch16); for DINOv2\n"
    "                 vit_base_patch14_dinov2, vit_base_patch14_dinov2_reg4, vit_small_patch14_dinov2,\n"
    "                 vit_small_patch14_dinov2_reg4; or e.g. \"img=32,patch=8,dim=48,depth=2,heads=3\"\n"
    "                 (see layers/vit_config.h)\n"
    "  -h, --help     this text\n"
    "\n"
    "module./backbone./vit. prefixes are stripped, head.* and pooler.* dropped, DINOv2's mask token\n"
    "dropped; every parameter of the configuration must be present with its shape. Exit status:\n"
    "0 done, 1 error, 2 bad usage.\n";

int usage_error(const std::string& message) {
  std::cerr << "mcdl_convert: " << message << "\n"
            << "run 'mcdl_convert --help' for usage\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, output, spec = "vit_base_patch16";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "-o" || arg == "--output" || arg == "--config") {
      if (i + 1 >= argc) return usage_error(arg + " needs a value");
      (arg == "--config" ? spec : output) = argv[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      return usage_error("unknown option '" + arg + "'");
    } else if (input.empty()) {
      input = arg;
    } else {
      return usage_error("more than one input ('" + input + "' and '" + arg + "')");
    }
  }
  if (input.empty()) return usage_error("no input file");
  if (output.empty()) return usage_error("no output file (-o OUT.safetensors)");

  mcdl::ModelConfig config;
  try {
    config = mcdl::parse_model_config(spec);
  } catch (const std::exception& e) {
    return usage_error(std::string("--config: ") + e.what());
  }
  if (config.has_head()) return usage_error("--config: the converter writes a backbone only; leave out classes=");

  try {
    const mcdl::CheckpointTensors read = mcdl::read_checkpoint_tensors(input);
    std::cout << "mcdl_convert: read " << input << " (" << read.format << "): " << read.tensors.size() << " tensors\n";
    for (const std::string& note : read.notes) std::cout << "note: " << note << "\n";
    const mcdl::BackboneConversion converted = mcdl::convert_dino_backbone(read.tensors, config.backbone);
    for (const std::string& note : converted.notes) std::cout << "note: " << note << "\n";
    for (const std::string& warning : converted.warnings) std::cerr << "warning: " << warning << "\n";
    mcdl::save_dino_backbone(output, converted, config.backbone);

    int64_t parameters = 0;
    size_t bytes = 0;
    for (const auto& [name, tensor] : converted.tensors) {
      parameters += tensor.numel();
      bytes += tensor.nbytes();
    }
    const mcdl::VitConfig& b = config.backbone;
    std::cout << "mcdl_convert: wrote " << output << ": " << converted.tensors.size() << " tensors, " << parameters
              << " parameters, " << bytes << " bytes (f32); config " << spec << " (img " << b.img_size << ", patch "
              << b.patch_size << ", dim " << b.embed_dim << ", depth " << b.depth << ", heads " << b.num_heads << ")";
    if (!converted.warnings.empty()) std::cout << "; " << converted.warnings.size() << " warning(s)";
    std::cout << "\n";
  } catch (const std::exception& e) {
    std::cerr << "mcdl_convert: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
