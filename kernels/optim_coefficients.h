// The hyperparameters of one optimizer update, an argument of the CPU and CUDA kernels of
// optim.h alike.
#pragma once

namespace mcdl {

struct SgdCoefficients {
  double lr, weight_decay, momentum;
  bool nesterov;
};

struct AdamWCoefficients {
  double lr, weight_decay, beta1, beta2, eps;
};

}  // namespace mcdl
