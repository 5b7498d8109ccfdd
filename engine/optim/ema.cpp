#include "engine/optim/ema.h"

#include <cmath>

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"

namespace mcdl {

void ema_update(const std::vector<NamedParameter>& average, const std::vector<NamedParameter>& live,
                double momentum) {
  check(std::isfinite(momentum) && momentum >= 0 && momentum <= 1, "EMA: momentum must be in [0, 1], got ",
        momentum);
  check(average.size() == live.size(), "EMA: ", average.size(), " averaged parameters against ", live.size(),
        " live ones");
  NoGradGuard no_grad;
  for (size_t i = 0; i < average.size(); ++i) {
    const NamedParameter &a = average[i], &v = live[i];
    check(a.name == v.name, "EMA: parameter ", i, " is '", a.name, "' in the average and '", v.name,
          "' in the model");
    check(a.tensor.shape() == v.tensor.shape() && a.tensor.dtype() == v.tensor.dtype() &&
              a.tensor.device() == v.tensor.device(),
          "EMA: '", a.name, "' differs in shape, dtype or device between the average and the model");
    Tensor target = a.tensor;
    dispatch_floating(target.dtype(), "EMA update", [&](auto zero) {
      using T = decltype(zero);
      on_device(target.device(), [&](auto k) {
        k.ema_update(target.ptr<T>(), v.tensor.ptr<T>(), target.numel(), momentum);
      });
    });
  }
}

}  // namespace mcdl
