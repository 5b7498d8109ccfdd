// MCDL's part of one training iteration (docs/method.md §2–4), after the base method's forward pass
// on the two weak views: the strong view's forward pass, the memory-bank update, the credibility
// buckets, and L_sup, L_semi (with the forward pass of the mixed images) and L_self.
//
// The base method is reached only through its logits: SimGCD's cosine classifier, or for GCD
// the k-means centroids (mcdl/method/kmeans_classifier.h; docs/method.md §9), so that both methods
// share this one step.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/shards.h"
#include "engine/tensor.h"
#include "mcdl/method/credibility.h"
#include "mcdl/method/memory_bank.h"
#include "mcdl/run/train_config.h"

namespace mcdl {

struct McdlTerms {
  Tensor sup, semi, self;  // scalars (zero before mcdl_start)
  Tensor strong_logits;    // [B, K] the strong view's logits, detached (the view check reads them)
};

// The factor on the MCDL losses in epoch `epoch`: 0 before mcdl_start, then
// (epoch − start + 1)/(ramp + 1) until it reaches 1 after --mcdl-ramp epochs.
double mcdl_loss_weight(const McdlSettings& settings, int64_t epoch);

// The base method's loss plus MCDL's (Eq. 10): base + sup + λ·(semi + self), times `weight`
// (mcdl_loss_weight) when it is below 1; `base` alone at weight 0. At weight 1 exactly the
// spec's sum in the spec's order, so the paper variant stays bit for bit.
Tensor add_mcdl_losses(const Tensor& base, const McdlTerms& terms, double lambda, double weight);

// The base method's classifier: images [n, C, H, W] → logits [n, K] before the temperature
// (cosine similarities), with a graph unless a NoGradGuard is active.
using LogitsFunction = std::function<Tensor(const Tensor& images)>;

// One batch as MCDL's step reads it. weak_logits and weak_projection: the model's logits and the
// projections L_sup acts on for [weak1; weak2] (2B rows); labels / labelled / bank_index per
// sample (bank_index: the slot in the banks, −1 for a labelled sample); epoch and iteration key
// the MixMatch draw. With an EMA teacher, its logits of [weak1; weak2] and of the strong view
// fill the banks and give L_self its targets instead of the model's (null: the model's). `shards`:
// the run's when each process holds only its own images' rows of weak1 (Shards::own_positions);
// the mixed images' rows then come from the processes that hold them (null: every row is here).
struct McdlBatch {
  const Tensor& weak_logits;
  const Tensor& weak_projection;
  const Tensor& weak1;
  const Tensor& strong;
  const std::vector<int64_t>& labels;
  const std::vector<uint8_t>& labelled;
  const std::vector<int64_t>& bank_index;
  int64_t epoch, iteration;
  const Tensor* teacher_weak_logits = nullptr;
  const Tensor* teacher_strong_logits = nullptr;
  const Shards* shards = nullptr;
};

class McdlStep {
 public:
  explicit McdlStep(const McdlSettings& settings) : settings_(settings) {}
  // With `losses` false (before mcdl_start) only the banks are updated and the strong view runs
  // without a graph.
  McdlTerms run(const LogitsFunction& logits, const McdlBatch& batch, MemoryBank& bank_weak,
                MemoryBank& bank_strong, bool losses);
  // The class cap's demotions for the coming steps: a mask over bank slots (1: a high sample that
  // counts as medium; mcdl/method/class_cap.h), or empty for none.
  void set_demoted(std::vector<uint8_t> demoted) { demoted_ = std::move(demoted); }

 private:
  McdlSettings settings_;
  std::vector<uint8_t> demoted_;
};

}  // namespace mcdl
