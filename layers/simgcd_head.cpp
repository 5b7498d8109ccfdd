#include "layers/simgcd_head.h"

#include <cmath>

#include "engine/ops.h"

namespace mcdl {
namespace {
const HeadConfig& validated(const HeadConfig& config) {
  config.validate();
  check(config.num_classes > 0, "SimGCDHead: num_classes must be positive, got ", config.num_classes);
  return config;
}
}  // namespace

SimGCDHead::SimGCDHead(int64_t in_dim, const HeadConfig& config)
    : mlp0(in_dim, validated(config).hidden_dim, true, ParamInit::trunc_normal(config.init_std)),
      mlp2(config.hidden_dim, config.hidden_dim, true, ParamInit::trunc_normal(config.init_std)),
      mlp4(config.hidden_dim, config.bottleneck_dim, true, ParamInit::trunc_normal(config.init_std)),
      weight_g(empty({config.num_classes, 1})),
      weight_v(new_parameter({config.num_classes, in_dim})) {}

HeadOutput SimGCDHead::forward(const Tensor& features) const {
  check(features.dim() == 2 && features.size(1) == weight_v.size(1), "SimGCDHead: expected features [B, ",
        weight_v.size(1), "], got ", features.str());
  Tensor projection = mlp4.forward(gelu(mlp2.forward(gelu(mlp0.forward(features)))));
  Tensor logits = linear(l2_normalize(features), weight_norm(weight_v, weight_g));
  return {projection, logits};
}

void SimGCDHead::set_trainable(bool on) {
  set_requires_grad(on);
  weight_g.set_requires_grad(false);
}

void SimGCDHead::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  mlp0.visit_parameters(prefix + "mlp.0.", visit);
  mlp2.visit_parameters(prefix + "mlp.2.", visit);
  mlp4.visit_parameters(prefix + "mlp.4.", visit);
  visit(prefix + "last_layer.weight_g", weight_g, ParamInit::constant(1.0));
  visit(prefix + "last_layer.weight_v", weight_v,
        ParamInit::uniform(1.0 / std::sqrt(static_cast<double>(weight_v.size(1)))));
}

}  // namespace mcdl
