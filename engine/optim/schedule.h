// Learning-rate schedules stepped once per epoch, as small value types: lr_at(epoch) gives
// the learning rate for that epoch (0-based), to pass to Optimizer::set_lr.
#pragma once
#include <cstdint>

namespace mcdl {

// lr(e) = eta_min + (base_lr − eta_min)·(1 + cos(π·e / T))/2, the closed form of PyTorch's
// CosineAnnealingLR with T_max = T. Epochs past T follow the same formula (PyTorch's
// closed form), so the rate climbs again; train for at most T epochs.
class CosineAnnealing {
 public:
  CosineAnnealing(double base_lr, int64_t total_epochs, double eta_min = 0.0);
  double lr_at(int64_t epoch) const;

 private:
  double base_lr_, eta_min_;
  int64_t total_epochs_;
};

// Linear warm-up from start_lr at epoch 0 towards base_lr over warmup_epochs epochs, then
// cosine annealing from base_lr to eta_min over the remaining total_epochs − warmup_epochs:
// lr(e) = start_lr + (base_lr − start_lr)·e / W for e < W, else cosine(e − W) with
// T = total_epochs − W.
class WarmupCosine {
 public:
  WarmupCosine(double start_lr, int64_t warmup_epochs, double base_lr, int64_t total_epochs, double eta_min = 0.0);
  double lr_at(int64_t epoch) const;

 private:
  double start_lr_, base_lr_;
  int64_t warmup_epochs_;
  CosineAnnealing cosine_;
};

}  // namespace mcdl
