#include "layers/layer_norm.h"

#include "engine/ops.h"

namespace mcdl {

LayerNorm::LayerNorm(int64_t dim, double eps) : weight(new_parameter({dim})), bias(new_parameter({dim})), eps_(eps) {}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps_); }

Tensor LayerNorm::forward_bf16(const Tensor& x) const { return bf16_layer_norm(x, weight, bias, eps_); }

void LayerNorm::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  visit(prefix + "weight", weight, ParamInit::constant(1.0));
  visit(prefix + "bias", bias, ParamInit::constant(0.0));
}

}  // namespace mcdl
