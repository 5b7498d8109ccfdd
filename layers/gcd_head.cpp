#include "layers/gcd_head.h"

#include <cmath>

#include "engine/ops.h"

namespace mcdl {
namespace {
const GcdHeadConfig& validated(int64_t in_dim, const GcdHeadConfig& config) {
  check(in_dim > 0 && config.hidden_dim > 0 && config.bottleneck_dim > 0 && config.out_dim > 0,
        "GcdHead: in_dim ", in_dim, ", hidden ", config.hidden_dim, ", bottleneck ", config.bottleneck_dim,
        " and out_dim ", config.out_dim, " must be positive");
  check(config.init_std > 0, "GcdHead: init_std must be positive, got ", config.init_std);
  return config;
}
}  // namespace

GcdHead::GcdHead(int64_t in_dim, const GcdHeadConfig& config)
    : mlp0(in_dim, validated(in_dim, config).hidden_dim, true, ParamInit::trunc_normal(config.init_std)),
      mlp2(config.hidden_dim, config.hidden_dim, true, ParamInit::trunc_normal(config.init_std)),
      mlp4(config.hidden_dim, config.bottleneck_dim, true, ParamInit::trunc_normal(config.init_std)),
      weight_g(empty({config.out_dim, 1})),
      weight_v(new_parameter({config.out_dim, config.bottleneck_dim})) {}

Tensor GcdHead::forward(const Tensor& features) const {
  check(features.defined() && features.dim() == 2 && features.size(1) == mlp0.weight.size(1),
        "GcdHead: expected features [B, ", mlp0.weight.size(1), "], got ",
        features.defined() ? features.str() : std::string("undefined"));
  const Tensor bottleneck = mlp4.forward(gelu(mlp2.forward(gelu(mlp0.forward(features)))));
  return linear(l2_normalize(bottleneck), weight_norm(weight_v, weight_g));
}

void GcdHead::set_trainable(bool on) {
  set_requires_grad(on);
  weight_g.set_requires_grad(false);
}

void GcdHead::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  mlp0.visit_parameters(prefix + "mlp.0.", visit);
  mlp2.visit_parameters(prefix + "mlp.2.", visit);
  mlp4.visit_parameters(prefix + "mlp.4.", visit);
  visit(prefix + "last_layer.weight_g", weight_g, ParamInit::constant(1.0));
  visit(prefix + "last_layer.weight_v", weight_v,
        ParamInit::uniform(1.0 / std::sqrt(static_cast<double>(weight_v.size(1)))));
}

}  // namespace mcdl
