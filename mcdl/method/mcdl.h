// MCDL as one component that attaches to any base method with per-sample predictions
// (mcdl/method/base_method.h): SimGCD through its classifier head, GCD through the k-means
// classifier it builds for MCDL (mcdl/method/kmeans_classifier.h). It owns the two memory banks
// over the unlabelled images and runs MCDL's part of each step (mcdl/method/mcdl_step.h: the
// strong view, the banks, the credibility buckets, L_sup, L_semi, L_self); its losses are added
// to the base method's with the variant's weights and schedule. At the end of an epoch it reports
// the buckets, their pseudo-label accuracy against selection by confidence (mcdl/method/
// bucket_report.h) and the weak and strong views' accuracy on the labelled rows, and its banks go
// into the checkpoint.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/loader.h"
#include "mcdl/method/base_method.h"
#include "mcdl/method/bucket_report.h"
#include "engine/shards.h"
#include "mcdl/method/mcdl_step.h"
#include "mcdl/method/memory_bank.h"

namespace mcdl {

class Mcdl {
 public:
  // Banks over data's unlabelled pool with K clusters; across the processes of `world` (null: this
  // one alone) each keeps its block of the banks (memory_bank.h). `shards`: the run's, whose
  // processes each prepare only their own images of a batch (Shards::own_positions), so the
  // mixed images' rows come from the processes that hold them (null: every row is here).
  Mcdl(const McdlSettings& settings, const TrainingData& data, int64_t clusters, Device device,
       Collective* world = nullptr, const Shards* shards = nullptr);

  static std::vector<std::string> loss_names() { return {"l_sup", "l_semi", "l_self"}; }
  // The base method's loss plus MCDL's terms at the epoch's weight (mcdl_step.h).
  Tensor total(const Tensor& base, const McdlTerms& terms, double weight) const {
    return add_mcdl_losses(base, terms, settings_.lambda, weight);
  }

  // Before an epoch's steps: the factor on MCDL's losses in `epoch` (0 before they start: the
  // banks still fill). They start at settings.start, or with start_fill > 0 at the first epoch
  // from there whose start finds that share of the unlabelled images with a full weak window (the
  // ramp then counts from that epoch). With --mcdl-class-cap and the losses on, the cap's
  // demotions are drawn from the banks as they are now (mcdl/method/class_cap.h).
  double begin_epoch(int64_t epoch);

  // MCDL's part of a step after the base method's: batch.views[0] is the first weak view,
  // batch.views[2] the strong one.
  McdlTerms step(TrainedMethod& base, const BaseStep& base_step, const LoadedBatch& batch, const BatchLabels& labels,
                 int64_t epoch, bool losses);

  // The end-of-epoch bucket columns (bucket_report.h's; the pseudo-labels mapped to classes
  // through the v2 assignment of the epoch's predictions); returns the summary line's part.
  std::string append_buckets(MetricsRow& row, const EpochPredictions& predictions) const;
  // The validation columns val_high, val_medium, val_high_precision, val_medium_precision,
  // val_high_conf_precision, val_medium_conf_precision: the banks' pseudo-label precision on the
  // validation images (by consistency, and the same numbers by confidence), mapped through the
  // assignment `cluster_to_class` of the validation images' own predictions.
  static std::vector<std::string> validation_columns();
  std::string append_validation(MetricsRow& row, const std::vector<int64_t>& cluster_to_class) const;
  // The view check of the epoch's steps, from the labelled rows (whose labels the user has):
  // labelled_weak_acc (the first weak view's argmax) and labelled_strong_acc (the strong view's);
  // then the counts start again. NaN for an epoch without labelled rows.
  static std::vector<std::string> view_columns() { return {"labelled_weak_acc", "labelled_strong_acc"}; }
  void append_view_accuracy(MetricsRow& row);

  // The checkpoint's part: "bank_weak.*" and "bank_strong.*" (each process's rows of the banks),
  // and, once a fill has started the losses, "mcdl.fill_start" (the epoch, i64 [1]).
  void save(std::map<std::string, Tensor>& tensors, std::map<std::string, RowBlocks>& row_blocks) const;
  void load(const std::map<std::string, Tensor>& tensors, const std::map<std::string, StoredTensor>& stored = {});

 private:
  McdlSettings settings_;
  std::vector<int64_t> truth_, validation_truth_;  // per bank slot: for the reports only (−1: none)
  int64_t num_old_;
  // The epoch's labelled rows: their labels and both views' argmax (on the device until read).
  std::vector<int64_t> view_truth_;
  std::vector<Tensor> weak_argmax_, strong_argmax_;
  MemoryBank bank_weak_, bank_strong_;
  McdlStep step_;
  const Shards* shards_;
  std::optional<int64_t> fill_start_;  // the epoch a bank fill started the losses (start_fill > 0)
};

}  // namespace mcdl
