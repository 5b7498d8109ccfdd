#include "engine/optim/sgd.h"

#include <cmath>

#include "engine/autograd.h"
#include "engine/dispatch.h"
#include "kernels/cpu/optim.h"
#include "kernels/cuda/optim.h"

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
    const cpu::SgdCoefficients coefficients{group.lr, group.weight_decay, options_.momentum, options_.nesterov};
    const cuda::SgdCoefficients device_coefficients{group.lr, group.weight_decay, options_.momentum,
                                                    options_.nesterov};
    for (const NamedParameter& p : group.params) {
      const Tensor grad = p.tensor.grad();
      if (!grad.defined()) continue;
      Tensor param = p.tensor;
      bool first_step = false;
      Tensor* buffer = nullptr;
      if (options_.momentum > 0) buffer = &state_tensor("momentum_buffer", p, false, first_step);
      switch (param.device().type) {
        case DeviceType::cpu:
          dispatch_floating(param.dtype(), "SGD step", [&](auto zero) {
            using T = decltype(zero);
            cpu::sgd_update(param.data<T>(), grad.data<T>(), buffer ? buffer->data<T>() : nullptr, param.numel(),
                            coefficients, first_step);
          });
          break;
        case DeviceType::cuda:
          dispatch_floating(param.dtype(), "SGD step", [&](auto zero) {
            using T = decltype(zero);
            cuda::sgd_update(param.ptr<T>(), grad.ptr<T>(), buffer ? buffer->ptr<T>() : nullptr, param.numel(),
                             device_coefficients, first_step);
          });
          break;
      }
    }
  }
}

}  // namespace mcdl
