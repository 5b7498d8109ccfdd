// Converting DINO ViT backbone weights (facebookresearch/dino's .pth files, DINO full
// checkpoints, Hugging Face ViTModel files, DINOv2's .pth files and Hugging Face Dinov2Model
// files, safetensors) into the engine's weights file: the
// parameters of VisionTransformer(config) under DINO's names (layers/vision_transformer.h), f32,
// with the model configuration in the safetensors metadata ("config").
//
// Key handling, in order:
//   1. leading "module." (DistributedDataParallel), "backbone." (DINO's MultiCropWrapper) and
//      "vit." (Hugging Face task models) are stripped, repeatedly ("module.backbone.x" -> "x");
//   2. DINO's projection head ("head.*") and Hugging Face's pooler ("pooler.*") are dropped,
//      with a note;
//   3. Hugging Face ViTModel names map to DINO's (embeddings.cls_token -> cls_token,
//      embeddings.position_embeddings -> pos_embed, embeddings.patch_embeddings.projection ->
//      patch_embed.proj, encoder.layer.N.{layernorm_before, layernorm_after} -> blocks.N.{norm1,
//      norm2}, ...attention.attention.{query,key,value} -> fused blocks.N.attn.qkv (Q, K, V rows
//      in that order), ...attention.output.dense -> attn.proj, ...intermediate.dense -> mlp.fc1,
//      ...output.dense -> mlp.fc2, layernorm -> norm). The engine keeps the configuration's
//      LayerNorm eps (DINO's 1e-6), not Hugging Face's 1e-12;
//   3b. DINOv2: the official names are the engine's (ls1.gamma, ls2.gamma, register_tokens);
//      chunked blocks "blocks.<chunk>.<i>." read as "blocks.<i>."; Hugging Face Dinov2Model names
//      map as ViTModel's plus embeddings.register_tokens -> register_tokens, encoder.layer.N.
//      {norm1, norm2, mlp.fc1, mlp.fc2} -> blocks.N.{same}, layer_scale{1,2}.lambda1 ->
//      ls{1,2}.gamma; the mask token (mask_token, embeddings.mask_token) is dropped by name,
//      with a note: it serves DINOv2's masked pretraining only;
//   4. every parameter the configuration expects must be present with its exact shape (an error
//      names the key, its source key and both shapes); any other key is ignored with a warning.
// Nothing is inferred: the configuration is the caller's. Floating tensors are converted to
// f32; an integer tensor where a parameter belongs is an error.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "layers/vit_config.h"

namespace mcdl {

struct CheckpointTensors {
  std::map<std::string, Tensor> tensors;
  std::string format;              // "torch zip", "torch legacy" or "safetensors"
  std::vector<std::string> notes;  // how the tensors were found (e.g. under "teacher")
};

// Reads a torch.save file (zip or legacy, io/torch_checkpoint.h) or a safetensors file,
// telling them apart by their first bytes.
CheckpointTensors read_checkpoint_tensors(const std::string& path);

struct BackboneConversion {
  std::map<std::string, Tensor> tensors;  // exactly the backbone's parameters, f32
  std::vector<std::string> notes;         // what was stripped, dropped, renamed, converted
  std::vector<std::string> warnings;      // unknown keys that were ignored
};

// Throws mcdl::Error "dino checkpoint: ..." for a missing key, a wrong shape, a non-floating
// dtype, two keys that map to one name, or an incomplete query/key/value set.
BackboneConversion convert_dino_backbone(const std::map<std::string, Tensor>& source, const VitConfig& config);

// save_safetensors(path, converted tensors, {"config": model_config_to_json({config, no head})}).
void save_dino_backbone(const std::string& path, const BackboneConversion& converted, const VitConfig& config);

}  // namespace mcdl
