// MCDL on the GCD baseline (./mcdl_train --method gcd+mcdl; README: "GCD + MCDL"): what GCD's run
// (mcdl/gcd_baseline.cpp) adds to its own training when MCDL is plugged in. GCD's two views,
// head, loss, optimizer, freezing rule and final semi-supervised k-means stay as they are; this
// part owns the k-means classifier that stands in for SimGCD's (mcdl/kmeans_classifier.h), the
// two memory banks over the unlabelled images, and MCDL's step on the strong view, exactly as
// SimGCD + MCDL runs it (mcdl/mcdl_step.h, mcdl-spec §2–4), its losses added to GCD's with the
// same weights, variants and schedule.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "layers/vision_transformer.h"
#include "mcdl/kmeans_classifier.h"
#include "mcdl/mcdl_step.h"
#include "mcdl/memory_bank.h"
#include "mcdl/epoch_plan.h"
#include "mcdl/run_directory.h"
#include "mcdl/training_data.h"

namespace mcdl {

class GcdMcdl {
 public:
  // config with the variant's defaults filled in; `clusters` is K. The classifier's features
  // are those of every training image, the labelled ones first (GCD's clustering order).
  GcdMcdl(const TrainConfig& config, const TrainingData& data, int64_t clusters, Device device);

  // Refits the classifier on the L2-normalised features [N_labelled + N_unlabelled, D] of every
  // training image (before the first epoch and after each one); returns the unlabelled images'
  // clusters.
  std::vector<int64_t> fit(const Tensor& features);

  // MCDL's part of a step: weak_features [2B, D] the backbone's CLS features of the two weak
  // views (with their graph), head_outputs [2B, out] GCD's head on them (L_sup acts there, where
  // GCD's SupCon does), strong [B, ...] the strong view. With `losses` false (before
  // --mcdl-start) only the banks are updated.
  McdlTerms step(VisionTransformer& backbone, const Tensor& weak_features, const Tensor& head_outputs,
                 const Tensor& weak1, const Tensor& strong, const BatchLabels& labels, int64_t epoch,
                 int64_t iteration, bool losses);

  // The bucket columns of the end of an epoch (high, medium, low, high_pseudo_acc,
  // medium_pseudo_acc; the accuracies through the v2 assignment of the epoch's fit, whose
  // unlabelled clusters are `clusters`); returns the summary line's part.
  std::string append_buckets(MetricsRow& row, const std::vector<int64_t>& clusters) const;

  // The checkpoint's part: "bank_weak.*", "bank_strong.*" and "classifier.centres".
  void save(std::map<std::string, Tensor>& tensors) const;
  void load(const std::map<std::string, Tensor>& tensors);

 private:
  TrainConfig config_;
  // The unlabelled images' labels and old/new flags, for the pseudo-label accuracy only.
  std::vector<int64_t> truth_;
  std::vector<bool> is_old_;
  KMeansClassifier classifier_;
  MemoryBank bank_weak_, bank_strong_;
  McdlStep step_;
};

}  // namespace mcdl
