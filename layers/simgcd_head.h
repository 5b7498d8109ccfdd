// SimGCD's head (DINOHead(in_dim, out_dim = K, nlayers = 3), norm_last_layer = True):
//   projection = mlp(x): Linear(D → hidden) → GELU → Linear(hidden → hidden) → GELU →
//                Linear(hidden → bottleneck)   (not normalised inside the head)
//   logits     = last_layer(l2_normalize(x)): a bias-free Linear(D → K) under weight norm,
//                w_k = g_k · v_k / ‖v_k‖ with g fixed to 1 and never trained (requires_grad
//                off), so the logits are cosine similarities with unit class prototypes.
// Note the classifier acts on the normalised backbone feature x, not on the projection.
//
// Parameter names (prefix given by the owner, "head." in SimGCDModel), in this order:
//   mlp.0.weight [hidden, D], mlp.0.bias, mlp.2.weight [hidden, hidden], mlp.2.bias,
//   mlp.4.weight [bottleneck, hidden], mlp.4.bias, last_layer.weight_g [K, 1],
//   last_layer.weight_v [K, D]
// (the nn.Sequential indices of the Linear layers, and weight_norm's g / v names).
// Initialisation: MLP weights trunc_normal(0.02) (bounds ±2, effectively N(0, 0.02²)), zero
// biases; weight_v PyTorch's default U(±1/√D); weight_g 1.
#pragma once
#include "layers/dino_head_parts.h"
#include "layers/vit_config.h"

namespace mcdl {

struct HeadOutput {
  Tensor projection;  // [B, bottleneck]
  Tensor logits;      // [B, K]
};

class SimGCDHead : public Module {
 public:
  // Parameters allocated on the CPU in f32, uninitialised; weight_g frozen, the rest trainable.
  SimGCDHead(int64_t in_dim, const HeadConfig& config);

  HeadOutput forward(const Tensor& features) const;  // features [B, D]

  // Trains (or freezes) every parameter except weight_g, which stays frozen.
  void set_trainable(bool on);
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  DinoHeadMlp mlp;              // mlp.{0,2,4}.*
  WeightNormLinear last_layer;  // last_layer.weight_g [K, 1], last_layer.weight_v [K, D]
};

}  // namespace mcdl
