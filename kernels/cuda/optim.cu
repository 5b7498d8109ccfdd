#include "kernels/cuda/optim.h"

#include "kernels/cuda/device_math.h"
#include "kernels/cuda/elementwise_launch.h"

namespace mcdl::cuda {
namespace {

// The scalar coefficients are rounded to T on the host exactly as kernels/cpu/optim.h rounds them.
template <class T>
__global__ void sgd_kernel(T* param, const T* grad, T* momentum_buffer, int64_t n, T lr, T weight_decay, T momentum,
                           bool apply_weight_decay, bool nesterov, bool first_step) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    T d = apply_weight_decay ? grad[i] + weight_decay * param[i] : grad[i];
    if (momentum_buffer) {
      const T buf = first_step ? d : momentum * momentum_buffer[i] + d;
      momentum_buffer[i] = buf;
      d = nesterov ? d + momentum * buf : buf;
    }
    param[i] -= lr * d;
  }
}

// One thread: the counter that the following update kernel reads (stream order).
__global__ void increment_step_kernel(double* step_count) {
  if (grid_index() == 0) *step_count += 1;
}

template <class T>
struct AdamWConstants {
  T decay, beta1, beta2, one_minus_beta1, one_minus_beta2, eps;
};

template <class T>
__global__ void adamw_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, const double* step_count, int64_t n,
                             double lr, double beta1, double beta2, AdamWConstants<T> k) {
  // The bias corrections of step t, per thread (cheap next to the loop, and no host round trip).
  const double t = *step_count;
  const T step_size = static_cast<T>(lr / (1.0 - pow(beta1, t)));
  const T bias_correction2_sqrt = static_cast<T>(sqrt(1.0 - pow(beta2, t)));
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const T g = grad[i];
    const T m = k.beta1 * exp_avg[i] + k.one_minus_beta1 * g;
    const T v = k.beta2 * exp_avg_sq[i] + k.one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] = param[i] * k.decay - step_size * (m / (sqrt_of(v) / bias_correction2_sqrt + k.eps));
  }
}

template <class T>
__global__ void ema_kernel(T* average, const T* value, int64_t n, T momentum, T one_minus_momentum) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) average[i] = average[i] * momentum + one_minus_momentum * value[i];
}

}  // namespace

template <class T>
void sgd_update(T* param, const T* grad, T* momentum_buffer, int64_t n, const SgdCoefficients& c, bool first_step) {
  if (n == 0) return;
  launch(sgd_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), param, grad,
         momentum_buffer, n, static_cast<T>(c.lr), static_cast<T>(c.weight_decay), static_cast<T>(c.momentum),
         c.weight_decay != 0, c.nesterov, first_step);  // PyTorch skips wd = 0 (and so NaN·0)
}

template <class T>
void adamw_update(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, double* step_count, int64_t n,
                  const AdamWCoefficients& c) {
  launch(increment_step_kernel, dim3(1), dim3(block_size(32)), 0, engine_stream(), step_count);
  if (n == 0) return;
  const AdamWConstants<T> k{static_cast<T>(1.0 - c.lr * c.weight_decay),
                            static_cast<T>(c.beta1),
                            static_cast<T>(c.beta2),
                            static_cast<T>(1.0 - c.beta1),
                            static_cast<T>(1.0 - c.beta2),
                            static_cast<T>(c.eps)};
  launch(adamw_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), param, grad, exp_avg,
         exp_avg_sq, static_cast<const double*>(step_count), n, c.lr, c.beta1, c.beta2, k);
}

template <class T>
void ema_update(T* average, const T* value, int64_t n, double momentum) {
  if (n == 0) return;
  launch(ema_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), average, value, n,
         static_cast<T>(momentum), static_cast<T>(1.0 - momentum));
}

#define MCDL_INSTANTIATE_OPTIM(T)                                                                        \
  template void sgd_update<T>(T*, const T*, T*, int64_t, const SgdCoefficients&, bool);                 \
  template void adamw_update<T>(T*, const T*, T*, T*, double*, int64_t, const AdamWCoefficients&);     \
  template void ema_update<T>(T*, const T*, int64_t, double);
MCDL_INSTANTIATE_OPTIM(float)
MCDL_INSTANTIATE_OPTIM(double)

}  // namespace mcdl::cuda
