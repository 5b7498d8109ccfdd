#include "engine/optim/schedule.h"

#include <cmath>
#include <numbers>

#include "engine/error.h"

namespace mcdl {
namespace {

// The epochs left for the cosine after the warm-up (checked before the cosine is built).
int64_t cosine_epochs(int64_t warmup_epochs, int64_t total_epochs) {
  check(warmup_epochs >= 0 && warmup_epochs < total_epochs,
        "WarmupCosine: expected 0 <= warmup_epochs < total_epochs, got ", warmup_epochs, " and ", total_epochs);
  return total_epochs - warmup_epochs;
}

}  // namespace

CosineAnnealing::CosineAnnealing(double base_lr, int64_t total_epochs, double eta_min)
    : base_lr_(base_lr), eta_min_(eta_min), total_epochs_(total_epochs) {
  check(total_epochs > 0, "CosineAnnealing: total_epochs must be > 0, got ", total_epochs);
  check(std::isfinite(base_lr) && std::isfinite(eta_min) && eta_min >= 0 && base_lr >= eta_min,
        "CosineAnnealing: expected finite 0 <= eta_min <= base_lr, got base_lr ", base_lr, ", eta_min ", eta_min);
}

double CosineAnnealing::lr_at(int64_t epoch) const {
  check(epoch >= 0, "CosineAnnealing: epoch must be >= 0, got ", epoch);
  const double phase = std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(total_epochs_);
  return eta_min_ + (base_lr_ - eta_min_) * (1.0 + std::cos(phase)) / 2.0;
}

WarmupCosine::WarmupCosine(double start_lr, int64_t warmup_epochs, double base_lr, int64_t total_epochs,
                           double eta_min)
    : start_lr_(start_lr),
      base_lr_(base_lr),
      warmup_epochs_(warmup_epochs),
      cosine_(base_lr, cosine_epochs(warmup_epochs, total_epochs), eta_min) {
  check(std::isfinite(start_lr) && start_lr >= 0, "WarmupCosine: start_lr must be finite and >= 0, got ", start_lr);
}

double WarmupCosine::lr_at(int64_t epoch) const {
  check(epoch >= 0, "WarmupCosine: epoch must be >= 0, got ", epoch);
  if (epoch < warmup_epochs_) {
    return start_lr_ + (base_lr_ - start_lr_) * static_cast<double>(epoch) / static_cast<double>(warmup_epochs_);
  }
  return cosine_.lr_at(epoch - warmup_epochs_);
}

}  // namespace mcdl
