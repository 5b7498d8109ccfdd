// Fused per-parameter optimizer updates on device buffers, in place: the CUDA twins of
// kernels/cpu/optim.h, with the same formulas in the same order (PyTorch's single-tensor SGD
// and AdamW). Launches are queued on the engine stream.
#pragma once
#include <cstdint>

#include "kernels/optim_coefficients.h"

namespace mcdl::cuda {

// d = g + wd·p; with momentum: buf = d on the first step, else μ·buf + d, and d = buf (or
// d + μ·buf with Nesterov); then p −= lr·d. momentum_buffer is null when momentum is 0.
template <class T>
void sgd_update(T* param, const T* grad, T* momentum_buffer, int64_t n, const SgdCoefficients& c, bool first_step);

// step_count: the parameter's update counter, one f64 on the device. It is incremented first
// and its new value t gives the bias corrections, so a step never waits for the device (the
// counter is not read back to the host). Then, as on the CPU: p ·= 1 − lr·wd;
// m = β1·m + (1 − β1)·g; v = β2·v + (1 − β2)·g²;
// p −= (lr / (1 − β1^t))·m / (sqrt(v) / sqrt(1 − β2^t) + eps).
template <class T>
void adamw_update(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, double* step_count, int64_t n,
                  const AdamWCoefficients& c);

// a = m·a + (1 − m)·v in place, as kernels/cpu/optim.h's ema_update (the same roundings).
template <class T>
void ema_update(T* average, const T* value, int64_t n, double momentum);

}  // namespace mcdl::cuda
