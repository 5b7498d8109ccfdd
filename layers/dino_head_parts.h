// The two parts DINO's DINOHead is made of, shared by SimGCD's head (layers/simgcd_head.h) and
// GCD's (layers/gcd_head.h):
//   DinoHeadMlp      Linear(in → hidden) → GELU → Linear(hidden → hidden) → GELU →
//                    Linear(hidden → bottleneck); names 0.*, 2.*, 4.* (nn.Sequential indices);
//                    weights trunc_normal(init_std), zero biases.
//   WeightNormLinear a bias-free Linear(in → out) under weight norm, w_k = g_k · v_k / ‖v_k‖,
//                    with g fixed to 1 and never trained (norm_last_layer = True); names
//                    weight_g [out, 1] and weight_v [out, in], v at PyTorch's default U(±1/√in).
#pragma once
#include "layers/linear.h"

namespace mcdl {

class DinoHeadMlp : public Module {
 public:
  DinoHeadMlp(int64_t in_dim, int64_t hidden_dim, int64_t bottleneck_dim, double init_std);
  Tensor forward(const Tensor& x) const;
  int64_t in_dim() const { return layer0.weight.size(1); }
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Linear layer0, layer2, layer4;
};

class WeightNormLinear : public Module {
 public:
  WeightNormLinear(int64_t in_dim, int64_t out_dim);  // weight_g created frozen
  Tensor forward(const Tensor& x) const;
  // Trains (or freezes) weight_v; weight_g stays frozen.
  void set_trainable(bool on);
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Tensor weight_g, weight_v;
};

}  // namespace mcdl
