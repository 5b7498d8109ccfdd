// nn.LayerNorm over the last dimension with an elementwise affine (weight starts at 1, bias at 0).
#pragma once
#include "layers/module.h"

namespace mcdl {

class LayerNorm : public Module {
 public:
  LayerNorm(int64_t dim, double eps);

  Tensor forward(const Tensor& x) const;  // [..., dim] → [..., dim]
  // forward() on bf16 activations, no graph (engine/ops/inference.h: the frozen blocks' bf16 path).
  Tensor forward_bf16(const Tensor& x) const;
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Tensor weight, bias;  // [dim] each

 private:
  double eps_;
};

}  // namespace mcdl
