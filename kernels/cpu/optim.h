// Fused per-parameter optimizer updates: one pass over a parameter, its gradient and its
// state buffers, in place. The formulas and their order of operations follow PyTorch's
// single-tensor SGD and AdamW.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "kernels/optim_coefficients.h"

namespace mcdl::cpu {

// d = g + wd·p; with momentum: buf = d on the first step, else μ·buf + d, and d = buf (or
// d + μ·buf with Nesterov); then p −= lr·d. momentum_buffer is null when momentum is 0.
template <class T>
void sgd_update(T* param, const T* grad, T* momentum_buffer, int64_t n, const SgdCoefficients& c, bool first_step) {
  const T lr = static_cast<T>(c.lr), wd = static_cast<T>(c.weight_decay), mu = static_cast<T>(c.momentum);
  parallel_for(n, [&](int64_t i) {
    T d = c.weight_decay != 0 ? grad[i] + wd * param[i] : grad[i];  // PyTorch skips wd = 0 (and so NaN·0)
    if (momentum_buffer) {
      const T buf = first_step ? d : mu * momentum_buffer[i] + d;
      momentum_buffer[i] = buf;
      d = c.nesterov ? d + mu * buf : buf;
    }
    param[i] -= lr * d;
  });
}

// step_count: the parameter's update counter (one f64). It is incremented first and its new
// value t gives the bias corrections. Then p ·= 1 − lr·wd; m = β1·m + (1 − β1)·g;
// v = β2·v + (1 − β2)·g²; p −= (lr / (1 − β1^t))·m / (sqrt(v) / sqrt(1 − β2^t) + eps).
template <class T>
void adamw_update(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, double* step_count, int64_t n,
                  const AdamWCoefficients& c) {
  const double t = *step_count += 1;
  const T decay = static_cast<T>(1.0 - c.lr * c.weight_decay);
  const T beta1 = static_cast<T>(c.beta1), beta2 = static_cast<T>(c.beta2);
  const T one_minus_beta1 = static_cast<T>(1.0 - c.beta1), one_minus_beta2 = static_cast<T>(1.0 - c.beta2);
  const T step_size = static_cast<T>(c.lr / (1.0 - std::pow(c.beta1, t)));
  const T bias_correction2_sqrt = static_cast<T>(std::sqrt(1.0 - std::pow(c.beta2, t)));
  const T eps = static_cast<T>(c.eps);
  parallel_for(n, [&](int64_t i) {
    const T g = grad[i];
    const T m = beta1 * exp_avg[i] + one_minus_beta1 * g;
    const T v = beta2 * exp_avg_sq[i] + one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] = param[i] * decay - step_size * (m / (std::sqrt(v) / bias_correction2_sqrt + eps));
  });
}

// An exponential moving average of a parameter, in place: a = m·a + (1 − m)·v, as DINO's and
// the mean teacher's param_k.mul_(m).add_((1 − m)·param_q) (each product rounded to T, then the sum).
template <class T>
void ema_update(T* average, const T* value, int64_t n, double momentum) {
  const T m = static_cast<T>(momentum), one_minus_m = static_cast<T>(1.0 - momentum);
  parallel_for(n, [&](int64_t i) { average[i] = average[i] * m + one_minus_m * value[i]; });
}

}  // namespace mcdl::cpu
