// The transformer block's MLP: fc1 → exact GELU → fc2 (DINO's Mlp; its dropouts are 0).
#pragma once
#include "layers/linear.h"

namespace mcdl {

class Mlp : public Module {
 public:
  Mlp(int64_t dim, int64_t hidden_dim);

  // [..., dim] → [..., dim]; residual + forward(x) when `residual` is defined (added in fc2's
  // product), residual + gain ⊙ forward(x) with `gain` (LayerScale; Linear::forward).
  Tensor forward(const Tensor& x, const Tensor& residual = Tensor(), const Tensor& gain = Tensor()) const;
  // residual + forward(x) on bf16 activations, no graph (the residual added in fc2's product); with
  // `gain` (LayerScale), residual + gain ⊙ forward(x), the gain folded into fc2's bf16 weights.
  Tensor forward_bf16(const Tensor& x, const Tensor& residual, const Tensor& gain = Tensor()) const;
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Linear fc1, fc2;
};

}  // namespace mcdl
