#include "layers/mlp.h"

#include "engine/ops.h"

namespace mcdl {

Mlp::Mlp(int64_t dim, int64_t hidden_dim)
    : fc1(dim, hidden_dim, true, ParamInit::trunc_normal(0.02)),
      fc2(hidden_dim, dim, true, ParamInit::trunc_normal(0.02)) {}

Tensor Mlp::forward(const Tensor& x, const Tensor& residual, const Tensor& gain) const {
  return fc2.forward(gelu(fc1.forward(x)), residual, gain);
}

Tensor Mlp::forward_bf16(const Tensor& x, const Tensor& residual, const Tensor& gain) const {
  return fc2.forward_bf16(fc1.forward_bf16_gelu(x), residual, gain);
}

void Mlp::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  fc1.visit_parameters(prefix + "fc1.", visit);
  fc2.visit_parameters(prefix + "fc2.", visit);
}

}  // namespace mcdl
