// AdamW with PyTorch's semantics (torch.optim.AdamW, amsgrad off): p ·= 1 − lr·wd;
// m = β1·m + (1 − β1)·g; v = β2·v + (1 − β2)·g²; p −= lr·m̂ / (sqrt(v̂) + eps) with the bias
// corrections of the parameter's own step count t. State: "exp_avg.<name>",
// "exp_avg_sq.<name>" and "step.<name>" (f64 scalar; per parameter as in PyTorch, so a
// parameter skipped for lack of a gradient keeps its own count).
#pragma once
#include "engine/optim/optimizer.h"

namespace mcdl {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});
  void step() override;
  const AdamWOptions& options() const { return options_; }

 protected:
  std::vector<StateSlot> state_slots() const override;

 private:
  AdamWOptions options_;
};

}  // namespace mcdl
