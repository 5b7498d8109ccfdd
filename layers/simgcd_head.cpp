#include "layers/simgcd_head.h"

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
    : mlp(in_dim, validated(config).hidden_dim, config.bottleneck_dim, config.init_std),
      last_layer(in_dim, config.num_classes) {}

HeadOutput SimGCDHead::forward(const Tensor& features) const {
  check(features.dim() == 2 && features.size(1) == mlp.in_dim(), "SimGCDHead: expected features [B, ", mlp.in_dim(),
        "], got ", features.str());
  return {mlp.forward(features), last_layer.forward(l2_normalize(features))};
}

void SimGCDHead::set_trainable(bool on) {
  mlp.set_requires_grad(on);
  last_layer.set_trainable(on);
}

void SimGCDHead::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  mlp.visit_parameters(prefix + "mlp.", visit);
  last_layer.visit_parameters(prefix + "last_layer.", visit);
}

}  // namespace mcdl
