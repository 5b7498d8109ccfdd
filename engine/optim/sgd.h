// Stochastic gradient descent with PyTorch's semantics (torch.optim.SGD, dampening 0):
// d = g + wd·p; with momentum μ: buf = d on a parameter's first step, then buf = μ·buf + d,
// and d = buf (Nesterov: d + μ·buf); p −= lr·d. State: "momentum_buffer.<name>" (only when
// μ > 0).
#pragma once
#include "engine/optim/optimizer.h"

namespace mcdl {

struct SgdOptions {
  double momentum = 0.0;
  bool nesterov = false;  // needs momentum > 0
};

class Sgd : public Optimizer {
 public:
  explicit Sgd(std::vector<ParamGroup> groups, SgdOptions options = {});
  void step() override;
  const SgdOptions& options() const { return options_; }

 protected:
  std::vector<StateSlot> state_slots() const override;

 private:
  SgdOptions options_;
};

}  // namespace mcdl
