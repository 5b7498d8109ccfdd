// The epoch loop every training method shares: the learning rate of each epoch, the method's
// epoch of steps with its running loss terms and progress bar, the end-of-epoch work, the
// metrics row and the checkpoints; and the error of a loss that stops being finite.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/optim/optimizer.h"
#include "engine/shards.h"
#include "engine/tensor.h"
#include "mcdl/run/progress_bar.h"
#include "mcdl/run/run_directory.h"
#include "mcdl/run/run_progress.h"
#include "mcdl/run/train_config.h"
#include "mcdl/run/run_summary.h"
#include "mcdl/run/timing.h"

namespace mcdl {

// "name value name value ..." of a metrics row's loss terms `names`.
std::string loss_summary(const MetricsRow& row, const std::vector<std::string>& names);

// An epoch's loss terms, its progress bar and the --max-iters budget. On a GPU a step's terms stay
// there until they are read with the other steps' in one copy, every steps_per_read steps and at
// the end of the epoch: a step queues its work without waiting for the device to finish the last
// one. Each step's values are then checked (`check`, e.g. that they are finite) in step order and
// added up; a term that went wrong is still named with its step, just found up to 31 steps later.
// On the CPU, where reading waits for nothing, every step is read at once.
class EpochLog {
 public:
  static constexpr int64_t steps_per_read = 32;
  // Sees each step's values (one per name) and its batch number, once read.
  using Check = std::function<void(const std::vector<double>& values, int64_t batch)>;
  // A training run's epoch: the bar reads "epoch 3/100".
  EpochLog(const TrainConfig& config, int64_t epoch, int64_t num_batches, std::vector<std::string> names, Check check);
  // Any run's: the bar's label, the images per batch and the run's iteration budget (0: none).
  EpochLog(std::string label, int64_t num_batches, int64_t batch_size, int64_t max_iters, bool progress,
           std::vector<std::string> names, Check check);
  // After a step: keeps its terms (0-dim tensors of one dtype on one device, one per name; their
  // graphs are let go) and redraws the bar; counts the iteration in `iterations` (the run's total)
  // and returns false when the budget is spent.
  bool record(const std::vector<Tensor>& terms, int64_t batch, int64_t& iterations);
  // Reads the steps still kept, then appends each term's mean and "iterations" to the row; true
  // when every batch ran.
  bool finish(MetricsRow& row);

 private:
  void read_kept();

  std::vector<std::string> names_;
  Check check_;
  std::vector<double> sums_;
  std::vector<Tensor> kept_;       // the terms of the steps not yet read, step after step
  std::vector<int64_t> kept_batches_;
  int64_t done_ = 0, num_batches_, batch_size_, max_iters_;
  ProgressBar bar_;
};

// The epoch loop every training method shares (mcdl_train's methods and mcdl_pretrain): the
// learning rate of each epoch, the method's epoch, its end-of-epoch work (evaluation, the summary
// line), the metrics row and a checkpoint after every complete epoch (an epoch cut short by
// --max-iters is not checkpointed, so a resumed run redoes it from the previous checkpoint,
// exactly as an uninterrupted run would).
struct EpochSteps {
  std::function<bool(int64_t epoch, MetricsRow& row)> train;  // true when every batch ran
  // Returns where its scoring's time went (the metrics row's eval_*_seconds columns).
  std::function<EvalPhases(int64_t epoch, MetricsRow& row, bool final)> finish;
  // Empty for a run without checkpoints (pretraining writes its backbone in finish, after every
  // epoch, complete or not): then an epoch cut short gets no "not checkpointed" note either.
  std::function<void(int64_t epochs_completed)> checkpoint;
};
// What the loop does around the method's steps.
struct EpochLoop {
  int64_t epochs = 0;
  std::function<double(int64_t epoch)> lr_at;  // the learning-rate schedule
  Device device = Device::cpu();               // the run's: on a GPU the checkpoint is a profiler range
  const RunDirectory* metrics = nullptr;       // appends each epoch's row there (none: pretraining)
  // "running on the CPU: N s per epoch" after the first epoch, for runs whose epoch lines show no
  // time (pretraining's do).
  bool cpu_epoch_note = false;
};
// mcdl_train's loop: --epochs at SimGCD's cosine learning rate, the rows in the run directory,
// the note on the CPU.
EpochLoop training_epoch_loop(const TrainConfig& config, Device device, const RunDirectory& run);
// The summary's accuracy is left for the caller.
RunSummary run_epochs(const EpochLoop& loop, Optimizer& optimizer, RunProgress& progress, const EpochSteps& steps);

// Appends eval_seconds (the end-of-epoch work) and where it went: eval_features_seconds and
// eval_cluster_seconds (`phases`), eval_report_seconds (the rest).
void append_eval_seconds(MetricsRow& row, double eval_seconds, const EvalPhases& phases);

// A step's update: the gradients of `loss` (the last step's cleared first), then the optimizer's
// step, each a profiler range on a GPU ("backward", "optimizer_step"). With `shards`, the
// backward runs through the shards the step's forwards ran on.
void backward_and_step(const Tensor& loss, Optimizer& optimizer);
void backward_and_step(const Tensor& loss, Optimizer& optimizer, Shards& shards);

// The values of 0-dim tensors (loss terms) on the host, through one device-to-host copy (one
// synchronisation on a GPU instead of one per term).
std::vector<double> read_scalars(const std::vector<Tensor>& scalars);

// An EpochLog check for a training run's terms (names[0] is the total, called `total_name`): the
// error of a term that is not finite names it, the epoch, the iteration and what to do, with the
// last checkpoint, which `settle` (when given) puts on disk first. Every rank of a run meets such a
// term at the same step (the terms are the global batch's), so `settle` may exchange between them.
EpochLog::Check finite_loss_check(std::vector<std::string> names, std::string total_name, int64_t epoch,
                                  const RunDirectory& run, int64_t epochs_checkpointed,
                                  std::function<void()> settle = nullptr);

}  // namespace mcdl
