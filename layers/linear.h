// nn.Linear: y = x·Wᵀ + b with weight [out, in] and an optional bias [out].
#pragma once
#include "engine/ops/inference.h"
#include "layers/module.h"

namespace mcdl {

class Linear : public Module {
 public:
  // weight_init: how the weight is drawn (DINO's ViT: trunc_normal(0.02); PyTorch's default:
  // uniform(1/√in)). The bias, when present, starts at 0 (DINO's _init_weights).
  Linear(int64_t in_features, int64_t out_features, bool bias, ParamInit weight_init);

  // [..., in] → [..., out]; plus `residual` [..., out] when defined (in the product's epilogue on a
  // GPU). With `gain` (f32 [out], DINOv2's LayerScale) residual + gain ⊙ forward(x), the gain a
  // multiplication of its own and the residual added after it.
  Tensor forward(const Tensor& x, const Tensor& residual = Tensor(), const Tensor& gain = Tensor()) const;
  // forward() on bf16 activations, no graph, plus `residual` when defined (added in the product);
  // the weight and bias rounded to bf16 once and kept until they change. With `gain` (f32 [out],
  // DINOv2's LayerScale) residual + gain ⊙ forward(x): the gain folded into the kept bf16 weight
  // and bias (gain·W, gain·b), so it costs the product nothing.
  Tensor forward_bf16(const Tensor& x, const Tensor& residual = Tensor(), const Tensor& gain = Tensor()) const;
  // GELU(forward_bf16(x)) as one op (bf16_linear_gelu).
  Tensor forward_bf16_gelu(const Tensor& x) const;
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Tensor weight, bias;  // bias undefined when the layer has none

 private:
  ParamInit weight_init_;
  mutable Bf16Copy weight_bf16_, bias_bf16_;
};

}  // namespace mcdl
