#include "layers/gcd_head.h"

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
    : mlp(in_dim, validated(in_dim, config).hidden_dim, config.bottleneck_dim, config.init_std),
      last_layer(config.bottleneck_dim, config.out_dim) {}

Tensor GcdHead::forward(const Tensor& features) const {
  check(features.defined() && features.dim() == 2 && features.size(1) == mlp.in_dim(), "GcdHead: expected features [B, ",
        mlp.in_dim(), "], got ", features.defined() ? features.str() : std::string("undefined"));
  return last_layer.forward(l2_normalize(mlp.forward(features)));
}

void GcdHead::set_trainable(bool on) {
  mlp.set_requires_grad(on);
  last_layer.set_trainable(on);
}

void GcdHead::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  mlp.visit_parameters(prefix + "mlp.", visit);
  last_layer.visit_parameters(prefix + "last_layer.", visit);
}

}  // namespace mcdl
