// GCD's projection head (Vaze et al., CVPR 2022; docs/reference-facts.md §3.1): the repository's
// vits.DINOHead(in_dim, out_dim = 65536, nlayers = 3), norm_last_layer = True, whose forward is
//   x = mlp(x): Linear(D → hidden) → GELU → Linear(hidden → hidden) → GELU → Linear(hidden → bottleneck)
//   x = l2_normalize(x)
//   x = last_layer(x): a bias-free Linear(bottleneck → out_dim) under weight norm,
//       w_k = g_k · v_k / ‖v_k‖ with g fixed to 1 (requires_grad off)
// and GCD's contrastive losses are computed on this out_dim-wide output (L2-normalised again in
// contrastive_training.py's train()), not on the bottleneck. This differs from SimGCD's head
// (layers/simgcd_head.h), whose last layer is a classifier on the normalised backbone feature
// and whose losses use the bottleneck.
//
// Parameter names (GCD saves the head as its own state dict, *_proj_head.pt), in this order:
//   mlp.0.weight [hidden, D], mlp.0.bias, mlp.2.weight [hidden, hidden], mlp.2.bias,
//   mlp.4.weight [bottleneck, hidden], mlp.4.bias, last_layer.weight_g [out, 1],
//   last_layer.weight_v [out, bottleneck]
// Initialisation as DINOHead: MLP weights trunc_normal(init_std = 0.02) (bounds ±2), zero biases;
// the last layer is built after self.apply(_init_weights), so weight_v keeps PyTorch's default
// U(±1/√bottleneck); weight_g 1.
#pragma once
#include "layers/dino_head_parts.h"

namespace mcdl {

struct GcdHeadConfig {
  int64_t hidden_dim = 2048;
  int64_t bottleneck_dim = 256;
  int64_t out_dim = 65536;  // GCD's; small runs and tests shrink it
  double init_std = 0.02;
};

class GcdHead : public Module {
 public:
  // Parameters allocated on the CPU in f32, uninitialised; weight_g frozen, the rest trainable.
  GcdHead(int64_t in_dim, const GcdHeadConfig& config);

  // features [B, D] → [B, out_dim] (not normalised: DINOHead.forward's output).
  Tensor forward(const Tensor& features) const;

  // Trains (or freezes) every parameter except weight_g, which stays frozen.
  void set_trainable(bool on);
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  DinoHeadMlp mlp;              // mlp.{0,2,4}.*
  WeightNormLinear last_layer;  // last_layer.weight_g [out, 1], last_layer.weight_v [out, bottleneck]
};

}  // namespace mcdl
