// Model configurations: the DINO ViT backbone, the SimGCD head, and the two together.
//
// A configuration comes from a name, from "key=value" overrides, or from JSON (the
// `__metadata__` "config" entry of a weights file, so that the file alone says which model to
// build).
//
// Spec strings (--config): comma-separated items; the first may be a named configuration
// (default vit_base_patch16), every other item is key=value:
//   img, patch, chans, dim, depth, heads  positive integers (image size, patch size, input
//                                         channels, embedding width, blocks, attention heads)
//   mlp_ratio                             positive number; MLP hidden size = int(dim·mlp_ratio)
//   qkv_bias                              true/false (or 1/0)
//   eps                                   LayerNorm epsilon, positive number
//   layer_scale                           true/false: DINOv2's LayerScale (a learned [dim] gain on
//                                         each residual branch)
//   registers                             register tokens after the CLS token (DINOv2 _reg4: 4)
//   pos_img                               image size the position embedding was learned at (0 =
//                                         img; DINOv2: 518, a 37x37 grid interpolated to img)
//   classes                               head classes K (0 = backbone only)
//   head_hidden, head_bottleneck          head MLP sizes (SimGCD: 2048, 256)
// e.g. "img=28,patch=7,dim=64,depth=4,heads=4,chans=1", "vit_base_patch16,classes=100" or
// "vit_base_patch14_dinov2_reg4,img=280".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcdl {

struct VitConfig {
  int64_t img_size = 224;
  int64_t patch_size = 16;
  int64_t in_chans = 3;
  int64_t embed_dim = 768;
  int64_t depth = 12;
  int64_t num_heads = 12;
  double mlp_ratio = 4.0;
  bool qkv_bias = true;
  double norm_eps = 1e-6;
  bool layer_scale = false;   // DINOv2: x + ls1.gamma·attn(norm1(x)), x + ls2.gamma·mlp(norm2(x))
  int64_t num_registers = 0;  // DINOv2 _reg4: 4 register tokens after CLS, no position embedding
  int64_t pos_img_size = 0;   // image size of the stored position embedding; 0 = img_size

  int64_t mlp_hidden_dim() const { return static_cast<int64_t>(static_cast<double>(embed_dim) * mlp_ratio); }
  int64_t head_dim() const { return embed_dim / num_heads; }
  int64_t grid_size() const { return img_size / patch_size; }  // patches per side at img_size
  int64_t num_patches() const { return grid_size() * grid_size(); }
  // Patches per side of the stored position embedding (pos_embed is [1, 1 + pos_grid², D]).
  int64_t pos_grid_size() const { return (pos_img_size > 0 ? pos_img_size : img_size) / patch_size; }
  // Throws "vit config: ..." naming the first inconsistent value.
  void validate() const;
  bool operator==(const VitConfig&) const = default;
};

// SimGCD's DINOHead(in_dim = backbone width, out_dim = num_classes, nlayers = 3).
struct HeadConfig {
  int64_t hidden_dim = 2048;
  int64_t bottleneck_dim = 256;
  int64_t num_classes = 0;  // 0: no head
  // Std of the MLP weights at initialisation (SimGCD: 0.02, tuned for 768 → 2048 → 2048 → 256).
  // Not part of the stored architecture: it only matters to initialize().
  double init_std = 0.02;
  void validate() const;
  bool operator==(const HeadConfig&) const = default;
};

struct ModelConfig {
  VitConfig backbone;
  HeadConfig head;
  bool has_head() const { return head.num_classes > 0; }
  bool operator==(const ModelConfig&) const = default;
};

// DINO ViT-B/16: 224 px, patch 16, 3 channels, 768 wide, 12 blocks, 12 heads, MLP 3072,
// qkv bias, LayerNorm eps 1e-6.
VitConfig vit_base_patch16();
// DINOv2 (facebookresearch/dinov2 hub backbones): patch 14, MLP ratio 4, qkv bias, LayerNorm eps
// 1e-6, LayerScale, the position embedding learned at 518 px (37x37), 224 px input by default;
// ViT-S/14 = dim 384, 6 heads; ViT-B/14 = dim 768, 12 heads; 12 blocks; registers 0 or 4.
VitConfig vit_dinov2(int64_t embed_dim, int64_t num_heads, int64_t num_registers);
// The named configurations a spec may start with.
std::vector<std::string> model_config_names();

// Parses a spec string (see above). Errors name the item: an unknown name or key (listing the
// known ones), a malformed item, or a bad value.
ModelConfig parse_model_config(const std::string& spec);

// JSON: {"architecture": "dino_vit", "backbone": {img_size, patch_size, in_chans, embed_dim,
// depth, num_heads, mlp_ratio, qkv_bias, norm_eps [, layer_scale, num_registers, pos_img_size]},
// "head": {hidden_dim, bottleneck_dim,
// num_classes}} ("head" only when has_head()). The bracketed DINOv2 fields are written only when
// they differ from their defaults (false, 0, 0), so DINO ViT files read and write as before.
// Reading requires every other backbone field, rejects unknown fields and validates.
std::string model_config_to_json(const ModelConfig& config);
ModelConfig model_config_from_json(const std::string& json);

}  // namespace mcdl
