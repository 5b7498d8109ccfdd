#include "engine/optim/adamw.h"

#include <cmath>

#include "engine/autograd.h"
#include "engine/dispatch.h"
#include "kernels/cpu/optim.h"
#include "kernels/cuda/optim.h"

namespace mcdl {

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options)
    : Optimizer("AdamW", std::move(groups)), options_(options) {
  check(options_.beta1 >= 0 && options_.beta1 < 1 && options_.beta2 >= 0 && options_.beta2 < 1,
        "AdamW: betas must lie in [0, 1), got (", options_.beta1, ", ", options_.beta2, ")");
  check(std::isfinite(options_.eps) && options_.eps >= 0, "AdamW: eps must be finite and >= 0, got ", options_.eps);
}

std::vector<Optimizer::StateSlot> AdamW::state_slots() const {
  return {{"exp_avg", false}, {"exp_avg_sq", false}, {"step", true}};
}

void AdamW::step() {
  NoGradGuard no_grad;
  for (const ParamGroup& group : groups()) {
    for (const NamedParameter& p : group.params) {
      const Tensor grad = p.tensor.grad();
      if (!grad.defined()) continue;
      Tensor param = p.tensor;
      bool created = false;
      Tensor& exp_avg = state_tensor("exp_avg", p, false, created);
      Tensor& exp_avg_sq = state_tensor("exp_avg_sq", p, false, created);
      Tensor& step_count = state_tensor("step", p, true, created);
      switch (param.device().type) {
        case DeviceType::cpu: {
          double& t = step_count.data<double>()[0];
          t += 1;
          const cpu::AdamWCoefficients coefficients{group.lr, group.weight_decay, options_.beta1, options_.beta2,
                                                    options_.eps, static_cast<int64_t>(t)};
          dispatch_floating(param.dtype(), "AdamW step", [&](auto zero) {
            using T = decltype(zero);
            cpu::adamw_update(param.data<T>(), grad.data<T>(), exp_avg.data<T>(), exp_avg_sq.data<T>(),
                              param.numel(), coefficients);
          });
          break;
        }
        case DeviceType::cuda: {
          // The step counter stays on the device (the kernel increments it), so no sync per parameter.
          const cuda::AdamWCoefficients coefficients{group.lr, group.weight_decay, options_.beta1, options_.beta2,
                                                     options_.eps};
          dispatch_floating(param.dtype(), "AdamW step", [&](auto zero) {
            using T = decltype(zero);
            cuda::adamw_update(param.ptr<T>(), grad.ptr<T>(), exp_avg.ptr<T>(), exp_avg_sq.ptr<T>(),
                               step_count.ptr<double>(), param.numel(), coefficients);
          });
          break;
        }
      }
    }
  }
}

}  // namespace mcdl
