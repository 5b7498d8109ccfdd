// What the run harness (mcdl/harness/run.h) asks of a base method: SimGCD, GCD or k-means. The
// harness owns everything a run shares (the run directory, the epoch loop, checkpoints, resume,
// stop requests, progress, validation and the summary); a method owns its model, optimizer,
// losses and evaluation. MCDL (mcdl/method/mcdl.h) attaches to any base method that gives
// per-sample predictions (weak_logits and logits below).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/loader.h"
#include "engine/device.h"
#include "engine/optim/optimizer.h"
#include "engine/shards.h"
#include "engine/tensor.h"
#include "io/safetensors.h"
#include "mcdl/evaluation/cluster_accuracy.h"
#include "mcdl/run/epoch_plan.h"
#include "mcdl/run/run_directory.h"
#include "mcdl/run/run_progress.h"
#include "mcdl/run/timing.h"
#include "mcdl/run/train_config.h"
#include "mcdl/run/training_data.h"

namespace mcdl {

// What every method is built from: the run's resolved settings, its data, device, number of
// clusters K, directory and progress (all owned by the harness, which outlives the method), and
// the shards its training forwards run through (the harness runs the backward through them).
struct MethodContext {
  const TrainConfig& config;
  const TrainingData& data;
  Device device;
  int64_t clusters;
  const RunDirectory& run;
  const RunProgress& progress;
  Shards& shards;
};

// A base method's part of one training step on the two weak views [weak1; weak2].
struct BaseStep {
  Tensor total;               // the method's loss, 0-dim
  std::vector<Tensor> terms;  // its terms, in loss_names() order
  Tensor projection;          // [2B, P]: the rows MCDL's L_sup acts on (where the method's SupCon does)
  Tensor logits;              // [2B, K] the classifier's logits, where the method has a classifier head
  Tensor features;            // [2B, D] the backbone's CLS features, where the method keeps them
  Tensor teacher_logits;      // [2B, K] an EMA teacher's logits of the same views, where the method has one
};

// The clusters a method predicted at the end of an epoch for images whose labels the run knows,
// row for row: MCDL's bucket report and the validation columns read them.
struct EpochPredictions {
  std::vector<int64_t> predictions;
  std::vector<int64_t> truth;  // the benchmark's labels of the unlabelled images (−1: not scored)
  std::vector<bool> is_old;
  std::vector<int64_t> val_truth;  // the validation images' labels (−1 elsewhere; empty: none)
  std::vector<bool> val_is_old;
};

// What a method's end-of-epoch scoring gives the harness.
struct EpochScore {
  std::string line;  // the summary line's part ("  All 61.9 Old 70.1 New 57.8  test ...")
  std::optional<EpochPredictions> predictions;  // when the method predicted this epoch
  std::optional<ClusterAccuracy> accuracy, test_accuracy;  // when scored
  EvalPhases phases;  // where the scoring's time went (mcdl/run/timing.h)
};

class TrainedMethod;

// Every method: what it predicts and scores at the end of an epoch.
class BaseMethod {
 public:
  virtual ~BaseMethod() = default;
  // The method's training side, or null for a method that does not train (k-means): the harness
  // then scores it once.
  virtual TrainedMethod* trained() { return nullptr; }

  // The end of an epoch (`final`: the run's last): its columns (score_columns(), NaN where it
  // does not score this epoch) appended to the row. Writes the final predictions files itself.
  virtual EpochScore score(int64_t epoch, bool final, MetricsRow& row) = 0;
  virtual std::vector<std::string> score_columns() const = 0;
  // Columns after the validation ones (k-means: its inertia).
  virtual void append_closing_columns(MetricsRow& row) const { (void)row; }
};

// A method that trains a model with an optimizer, batch by batch.
class TrainedMethod : public BaseMethod {
 public:
  TrainedMethod* trained() override { return this; }

  virtual Optimizer& optimizer() = 0;
  // The metrics columns of its loss terms (after the total "loss"), and the total's name in the
  // message of a loss that is no longer finite.
  virtual std::vector<std::string> loss_names() const = 0;
  virtual std::string total_name() const = 0;
  virtual BaseStep step(const LoadedBatch& batch, const BatchLabels& labels, int64_t epoch) = 0;
  // After each optimizer step (an EMA teacher follows the model).
  virtual void after_step() {}

  // Per-sample predictions, for MCDL: the logits of a step's weak views [2B, K] (the banks read
  // them detached), and of other images [n, ...] → [n, K] (with a graph unless a NoGradGuard is
  // active). A method without a classifier of its own (GCD) builds one in enable_predictions.
  virtual void enable_predictions(bool resume) = 0;
  virtual Tensor weak_logits(const BaseStep& step) = 0;
  virtual Tensor logits(const Tensor& images) = 0;
  // An EMA teacher's logits of other images [n, ...] → [n, K], without a graph; undefined where
  // the method has no teacher (then MCDL's banks read the model's own predictions).
  virtual Tensor teacher_logits(const Tensor& images) {
    (void)images;
    return Tensor();
  }

  // The checkpoint: its tensors under their prefixes, the model configuration (JSON) and the
  // frozen blocks' fingerprint for the metadata; and the same read back on --resume.
  virtual void save(std::map<std::string, Tensor>& tensors) = 0;
  virtual std::string model_config_json() const = 0;
  virtual std::string frozen_fingerprint() const = 0;
  virtual void load(const SafetensorsFile& file, const std::string& path) = 0;
};

}  // namespace mcdl
