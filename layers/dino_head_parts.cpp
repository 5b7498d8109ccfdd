#include "layers/dino_head_parts.h"

#include <cmath>

#include "engine/ops.h"

namespace mcdl {

DinoHeadMlp::DinoHeadMlp(int64_t in_dim, int64_t hidden_dim, int64_t bottleneck_dim, double init_std)
    : layer0(in_dim, hidden_dim, true, ParamInit::trunc_normal(init_std)),
      layer2(hidden_dim, hidden_dim, true, ParamInit::trunc_normal(init_std)),
      layer4(hidden_dim, bottleneck_dim, true, ParamInit::trunc_normal(init_std)) {}

Tensor DinoHeadMlp::forward(const Tensor& x) const {
  return layer4.forward(gelu(layer2.forward(gelu(layer0.forward(x)))));
}

void DinoHeadMlp::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  layer0.visit_parameters(prefix + "0.", visit);
  layer2.visit_parameters(prefix + "2.", visit);
  layer4.visit_parameters(prefix + "4.", visit);
}

WeightNormLinear::WeightNormLinear(int64_t in_dim, int64_t out_dim)
    : weight_g(empty({out_dim, 1})), weight_v(new_parameter({out_dim, in_dim})) {}

Tensor WeightNormLinear::forward(const Tensor& x) const { return linear(x, weight_norm(weight_v, weight_g)); }

void WeightNormLinear::set_trainable(bool on) {
  set_requires_grad(on);
  weight_g.set_requires_grad(false);
}

void WeightNormLinear::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  visit(prefix + "weight_g", weight_g, ParamInit::constant(1.0));
  visit(prefix + "weight_v", weight_v, ParamInit::uniform(1.0 / std::sqrt(static_cast<double>(weight_v.size(1)))));
}

}  // namespace mcdl
