// The transformer block's MLP: fc1 → exact GELU → fc2 (DINO's Mlp; its dropouts are 0).
#pragma once
#include "layers/linear.h"

namespace mcdl {

class Mlp : public Module {
 public:
  Mlp(int64_t dim, int64_t hidden_dim);

  Tensor forward(const Tensor& x) const;  // [..., dim] → [..., dim]
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Linear fc1, fc2;
};

}  // namespace mcdl
