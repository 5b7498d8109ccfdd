#include "engine/optim/sgd.h"

#include <cmath>

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"

namespace mcdl {

Sgd::Sgd(std::vector<ParamGroup> groups, SgdOptions options) : Optimizer("SGD", std::move(groups)), options_(options) {
  check(std::isfinite(options_.momentum) && options_.momentum >= 0, "SGD: momentum must be finite and >= 0, got ",
        options_.momentum);
  check(!options_.nesterov || options_.momentum > 0, "SGD: Nesterov momentum requires a momentum > 0");
}

std::vector<Optimizer::StateSlot> Sgd::state_slots() const {
  if (options_.momentum == 0) return {};
  return {{"momentum_buffer", false}};
}

void Sgd::step() {
  NoGradGuard no_grad;
  for (const ParamGroup& group : groups()) {
    const SgdCoefficients coefficients{group.lr, group.weight_decay, options_.momentum, options_.nesterov};
    for (const NamedParameter& p : group.params) {
      const Tensor grad = p.tensor.grad();
      if (!grad.defined()) continue;
      Tensor param = p.tensor;
      bool first_step = false;
      Tensor* buffer = nullptr;
      if (options_.momentum > 0) buffer = &state_tensor("momentum_buffer", p, false, first_step);
      dispatch_floating(param.dtype(), "SGD step", [&](auto zero) {
        using T = decltype(zero);
        on_device(param.device(), [&](auto k) {
          k.sgd_update(param.ptr<T>(), grad.ptr<T>(), buffer ? buffer->ptr<T>() : nullptr, param.numel(), coefficients,
                       first_step);
        });
      });
    }
  }
}

}  // namespace mcdl
