// The model of the paper: DINO's ViT backbone with the SimGCD head on its CLS feature
// (SimGCD's nn.Sequential(backbone, projector)).
//
// Parameter names: the backbone's DINO names unprefixed (see layers/vision_transformer.h),
// then the head's under "head." (see layers/simgcd_head.h), e.g. blocks.11.attn.qkv.weight,
// norm.bias, head.mlp.0.weight, head.last_layer.weight_v. So a DINO backbone file loads into
// `backbone` directly, and a training checkpoint holds both under one scheme.
#pragma once
#include "layers/simgcd_head.h"
#include "layers/vision_transformer.h"

namespace mcdl {

class SimGCDModel : public Module {
 public:
  // Uninitialised parameters on the CPU (f32): initialize(seed) or load_parameters() next.
  // Requires config.has_head().
  explicit SimGCDModel(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }

  // images [B, C, H, W] → (projection [B, bottleneck], logits [B, K]).
  HeadOutput forward(const Tensor& images);

  // GCD / SimGCD training setup: backbone blocks ≥ grad_from_block train (the rest of the
  // backbone is frozen), the head trains except last_layer.weight_g.
  void set_grad_from_block(int64_t grad_from_block);

  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  VisionTransformer backbone;
  SimGCDHead head;

 private:
  ModelConfig config_;
};

}  // namespace mcdl
