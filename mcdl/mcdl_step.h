// MCDL's part of one training iteration (mcdl-spec §2–4), after the base method's forward pass
// on the two weak views: the strong view's forward pass, the memory-bank update, the credibility
// buckets, and L_sup, L_semi (with the forward pass of the mixed images) and L_self.
//
// The base method is reached only through its logits: SimGCD's cosine classifier, or for GCD
// the k-means centroids (mcdl/kmeans_classifier.h; README: "GCD + MCDL"), so that both methods
// share this one step.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "mcdl/credibility.h"
#include "mcdl/memory_bank.h"
#include "mcdl/run_directory.h"
#include "mcdl/train_config.h"

namespace mcdl {

struct McdlTerms {
  Tensor sup, semi, self;  // scalars (zero before mcdl_start)
};

// The factor on the MCDL losses in epoch `epoch` (config with its variant's defaults): 0 before
// mcdl_start, then (epoch − start + 1)/(ramp + 1) until it reaches 1 after --mcdl-ramp epochs.
double mcdl_loss_weight(const TrainConfig& config, int64_t epoch);

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
// the MixMatch draw.
struct McdlBatch {
  const Tensor& weak_logits;
  const Tensor& weak_projection;
  const Tensor& weak1;
  const Tensor& strong;
  const std::vector<int64_t>& labels;
  const std::vector<uint8_t>& labelled;
  const std::vector<int64_t>& bank_index;
  int64_t epoch, iteration;
};

class McdlStep {
 public:
  // Takes the config's MCDL settings with the variant's defaults filled in.
  explicit McdlStep(const TrainConfig& config);
  // With `losses` false (before mcdl_start) only the banks are updated and the strong view runs
  // without a graph.
  McdlTerms run(const LogitsFunction& logits, const McdlBatch& batch, MemoryBank& bank_weak,
                MemoryBank& bank_strong, bool losses);

 private:
  TrainConfig config_;
};

// The end-of-epoch picture of the banks over the whole unlabelled set: bucket sizes, and the
// pseudo-label accuracy of the high and medium samples (the paper's Table 6), their pseudo
// labels (high: the weak bank's mode; medium: the argmax of the mean of both banks' means)
// mapped to classes through the epoch's v2 assignment `cluster_to_class`; truth[i] is the label
// of unlabelled sample i (−1: unknown, not scored).
struct BucketReport {
  BucketCounts counts;
  int64_t known_high = 0, known_medium = 0;  // the samples with a truth label in each bucket
  double high_accuracy = 0.0, medium_accuracy = 0.0;  // over those; NaN for none
};
BucketReport bucket_report(const MemoryBank& bank_weak, const MemoryBank& bank_strong, int64_t mu,
                           const std::vector<int64_t>& truth, const std::vector<int64_t>& cluster_to_class);
// Appends its columns high, medium, low, high_pseudo_acc and medium_pseudo_acc to a metrics row;
// returns the summary line's part ("  H/M/L 700/80/600  pseudo acc H 43.0 M 31.5"; without the
// pseudo-label accuracies where neither bucket holds an image of known label).
std::string append_bucket_columns(MetricsRow& row, const BucketReport& report);

}  // namespace mcdl
