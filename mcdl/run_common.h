// What every training method's run shares (mcdl/trainer.cpp, mcdl/gcd_baseline.cpp): the
// backbone source, the epoch's batches from the sampler, the loader settings, scoring against
// the known labels, predictions.csv, checkpoint names, and small formatting helpers.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/sampler.h"
#include "engine/optim/optimizer.h"
#include "engine/tensor.h"
#include "io/safetensors.h"
#include "layers/vit_config.h"
#include "mcdl/cluster_accuracy.h"
#include "mcdl/progress.h"
#include "mcdl/run_directory.h"
#include "mcdl/train_config.h"
#include "mcdl/trainer.h"
#include "mcdl/training_data.h"

namespace mcdl {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start);
std::string percent(double fraction);  // "61.9"

// The backbone of a run: --weights FILE (configuration and tensors), or a fresh --model SPEC
// (no tensors); the message of neither says how to get DINO's weights.
struct BackboneSource {
  VitConfig config;
  std::map<std::string, Tensor> tensors;  // empty: initialise from the seed
};
BackboneSource backbone_source(const TrainConfig& config);
// --grad-from-block, −1 meaning the last block, checked against the depth.
int64_t first_trained_block(const TrainConfig& config, int64_t depth);

// The start of a run: "cub: 5994 training images, 200 classes (100 old): 1498 labelled, 4496
// unlabelled" on stderr, config.json (on resume: with the overrides given) and, for a new run,
// split.csv.
void begin_run(const TrainConfig& config, const TrainingData& data, const RunDirectory& run, bool resume);
// Loader threads: --workers, or automatic (none on the CPU backend, whose model uses every
// core; all cores but one with a GPU).
int64_t loader_workers(const TrainConfig& config, Device device);
LoaderOptions train_loader_options(const TrainConfig& config, const TrainingData& data, Device device,
                                   std::vector<ViewKind> views);

// One epoch of the SimGCD sampler: its draws and the batches of training images (drop_last).
struct EpochPlan {
  std::vector<SampledItem> draws;
  std::vector<std::vector<int64_t>> batches;  // train indices
};
EpochPlan plan_epoch(const TrainConfig& config, const TrainingData& data, int64_t epoch);
// Batch `batch` of the plan: labels (−1 for unlabelled samples: their ground truth never reaches
// a loss), labelled flags, and each unlabelled sample's memory-bank slot (−1 when labelled).
struct BatchLabels {
  std::vector<int64_t> labels;
  std::vector<uint8_t> labelled;
  std::vector<int64_t> bank_index;
};
BatchLabels batch_labels(const EpochPlan& plan, const TrainingData& data, int64_t batch);

// Scoring against the known labels only (the folder layout may have none: then NaN).
struct KnownLabels {
  std::vector<int64_t> truth, predictions;
  std::vector<bool> is_old;
};
KnownLabels known_labels(const std::vector<int64_t>& truth, const std::vector<int64_t>& predictions,
                         const std::vector<bool>& is_old);
ClusterAccuracy known_accuracy(const KnownLabels& known, bool balanced);
// Appends all/old/new (and, for datasets scored balanced, all_v2b/old_v2b/new_v2b) to the
// metrics row; returns the v2 accuracy.
ClusterAccuracy append_accuracy(MetricsRow& row, const KnownLabels& known, bool balanced_too);
// "id,prediction,label,old" rows (old/new/unknown by the label).
std::string predictions_csv(const std::vector<int64_t>& ids, const std::vector<int64_t>& predictions,
                            const std::vector<int64_t>& truth, int64_t num_old_classes);
// "name value name value ..." of a metrics row's loss terms (after epoch and lr, before iterations).
std::string loss_summary(const MetricsRow& row);

std::map<std::string, Tensor> prefixed(const std::string& prefix, const std::map<std::string, Tensor>& tensors);
std::map<std::string, Tensor> unprefixed(const std::string& prefix, const std::map<std::string, Tensor>& tensors);
// A checkpoint's metadata entry (an error names the file and the missing key).
std::string checkpoint_entry(const SafetensorsFile& file, const std::string& path, const char* key);
// An epoch's running loss terms, its progress bar and the --max-iters budget.
class EpochLog {
 public:
  EpochLog(const TrainConfig& config, int64_t epoch, int64_t num_batches, std::vector<std::string> names);
  // After a step: adds the step's values (one per name) and redraws the bar; counts the
  // iteration in `iterations` (the run's total) and returns false when the budget is spent.
  bool record(const std::vector<double>& values, int64_t& iterations);
  // Appends each term's mean and "iterations" to the row; true when every batch ran.
  bool finish(MetricsRow& row);

 private:
  std::vector<std::string> names_;
  std::vector<double> sums_;
  int64_t done_ = 0, num_batches_, batch_size_, max_iters_;
  ProgressBar bar_;
};

// Where a run stands: what its checkpoints record and what the epoch loop advances.
struct RunProgress {
  int64_t start_epoch = 0, epochs_completed = 0, iterations = 0;
  bool stop = false;  // the --max-iters budget is spent, or a resumed run has nothing left
};
// The metadata every method's checkpoint carries besides its tensors.
std::map<std::string, std::string> checkpoint_metadata(const TrainConfig& config, const RunProgress& progress,
                                                       int64_t epochs_completed, const std::string& model_config_json);
// Reads a checkpoint's progress back, drops the metrics rows of the epochs to be redone and says
// where the run resumes.
void resume_progress(const SafetensorsFile& file, const RunDirectory& run, const TrainConfig& config,
                     RunProgress& progress);

// The epoch loop every training method shares: the cosine learning rate of each epoch, the
// method's epoch, its end-of-epoch work (evaluation, the summary line), the metrics row and a
// checkpoint after every complete epoch (an epoch cut short by --max-iters is not checkpointed,
// so a resumed run redoes it from the previous checkpoint, exactly as an uninterrupted run would).
struct EpochSteps {
  std::function<bool(int64_t epoch, MetricsRow& row)> train;  // true when every batch ran
  std::function<void(int64_t epoch, MetricsRow& row, bool final)> finish;
  std::function<void(int64_t epochs_completed)> checkpoint;
};
// The summary's accuracy is left for the caller.
RunSummary run_epochs(const TrainConfig& config, Device device, Optimizer& optimizer, const RunDirectory& run,
                      RunProgress& progress, const EpochSteps& steps);

// The error of a loss that is not finite: term, epoch, iteration and what to do.
void check_finite_loss(double value, const std::string& term, int64_t epoch, int64_t iteration,
                       const RunDirectory& run, int64_t epochs_checkpointed);

}  // namespace mcdl
