#include "engine/optim/adamw.h"

#include <cmath>

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"

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
      // The step counter stays on the parameter's device (the kernel increments it): on a GPU, no
      // sync per parameter.
      const AdamWCoefficients coefficients{group.lr, group.weight_decay, options_.beta1, options_.beta2, options_.eps};
      dispatch_floating(param.dtype(), "AdamW step", [&](auto zero) {
        using T = decltype(zero);
        on_device(param.device(), [&](auto k) {
          k.adamw_update(param.ptr<T>(), grad.ptr<T>(), exp_avg.ptr<T>(), exp_avg_sq.ptr<T>(), step_count.ptr<double>(),
                         param.numel(), coefficients);
        });
      });
    }
  }
}

}  // namespace mcdl
