#include "layers/linear.h"

#include "engine/ops.h"

namespace mcdl {

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias, ParamInit weight_init)
    : weight(new_parameter({out_features, in_features})), weight_init_(weight_init) {
  if (with_bias) bias = new_parameter({out_features});
}

Tensor Linear::forward(const Tensor& x, const Tensor& residual, const Tensor& gain) const {
  if (!gain.defined()) return linear(x, weight, bias, residual);
  const Tensor scaled = linear(x, weight, bias) * gain;
  return residual.defined() ? residual + scaled : scaled;
}

Tensor Linear::forward_bf16(const Tensor& x, const Tensor& residual, const Tensor& gain) const {
  return bf16_linear(x, weight_bf16_.of(weight, gain), bias.defined() ? bias_bf16_.of(bias, gain) : Tensor(),
                     residual);
}

Tensor Linear::forward_bf16_gelu(const Tensor& x) const {
  return bf16_linear_gelu(x, weight_bf16_.of(weight), bias.defined() ? bias_bf16_.of(bias) : Tensor());
}

void Linear::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  visit(prefix + "weight", weight, weight_init_);
  if (bias.defined()) visit(prefix + "bias", bias, ParamInit::constant(0.0));
}

}  // namespace mcdl
