#include "mcdl/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>

#include "data/gcd_split.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "engine/autograd.h"
#include "engine/device.h"
#include "engine/error.h"
#include "engine/ops.h"
#include "io/npy.h"
#include "engine/optim/schedule.h"
#include "engine/optim/sgd.h"
#include "engine/profile.h"
#include "io/safetensors.h"
#include "layers/backbone_file.h"
#include "layers/simgcd_model.h"
#include "mcdl/checkpoint_writer.h"
#include "mcdl/credibility.h"
#include "mcdl/epoch_loop.h"
#include "mcdl/estimate_k.h"
#include "mcdl/frozen_backbone.h"
#include "mcdl/epoch_plan.h"
#include "mcdl/evaluator.h"
#include "mcdl/gcd_baseline.h"
#include "mcdl/kmeans.h"
#include "mcdl/mcdl_step.h"
#include "mcdl/memory_bank.h"
#include "mcdl/progress.h"
#include "mcdl/run_checkpoint.h"
#include "mcdl/run_directory.h"
#include "mcdl/run_start.h"
#include "mcdl/scoring.h"
#include "mcdl/simgcd_loss.h"
#include "mcdl/training_data.h"

namespace mcdl {
namespace {

// The model of the run: the backbone from --weights (or a fresh one from --model), the SimGCD
// head with K outputs initialised from the seed, then the freezing rule.
std::unique_ptr<SimGCDModel> build_model(const TrainConfig& config, int64_t num_classes) {
  const BackboneSource source = backbone_source(config);
  ModelConfig model_config;
  model_config.backbone = source.config;
  model_config.head.hidden_dim = config.head_hidden;
  model_config.head.bottleneck_dim = config.head_bottleneck;
  model_config.head.num_classes = num_classes;
  model_config.head.init_std = config.head_init_std;
  auto model = std::make_unique<SimGCDModel>(model_config);
  model->initialize(config.seed);
  if (!source.tensors.empty()) model->backbone.load_parameters(source.tensors);
  model->set_grad_from_block(first_trained_block(config, source.config.depth));
  return model;
}

// SimGCD's parameter groups: weight decay on weights, none on biases and 1-D parameters.
std::vector<ParamGroup> parameter_groups(SimGCDModel& model, double lr, double weight_decay) {
  ParamGroup decay{"decay", {}, lr, weight_decay}, no_decay{"no_decay", {}, lr, 0.0};
  for (auto& p : model.trainable_parameters()) {
    const bool is_bias = p.name.size() >= 5 && p.name.compare(p.name.size() - 5, 5, ".bias") == 0;
    (is_bias || p.tensor.dim() <= 1 ? no_decay : decay).params.push_back(p);
  }
  return {decay, no_decay};
}

class Trainer {
 public:
  Trainer(TrainConfig config, bool resume);
  RunSummary run();

 private:
  RunSummary run_kmeans();
  bool train_epoch(int64_t epoch, MetricsRow& row);  // true when every batch ran
  void evaluate(int64_t epoch, MetricsRow& row, bool final);
  std::vector<std::string> evaluation_columns() const;
  void save_checkpoint(int64_t epochs_completed);
  void load_checkpoint();
  void make_optimizer();
  void write_predictions(const std::vector<int64_t>& predictions);
  std::string append_validation(MetricsRow& row, const std::vector<int64_t>& predictions);

  TrainConfig config_;
  Method method_;
  bool resume_;
  Device device_;
  RunDirectory run_;
  CheckpointWriter checkpoints_{run_};  // after run_: written in the background, waited for before run_ goes
  TrainingData data_;
  ScopedEngineSettings settings_;  // the run's matmul precision, until its last product
  int64_t clusters_ = 0;  // the head's outputs (--clusters)
  std::unique_ptr<SimGCDModel> model_;
  std::string frozen_fingerprint_;  // of the backbone's frozen blocks, as built (mcdl/frozen_backbone.h)
  std::unique_ptr<Sgd> optimizer_;
  std::unique_ptr<MemoryBank> bank_weak_, bank_strong_;
  std::unique_ptr<EvaluationSet> eval_;
  std::vector<int64_t> eval_indices_, eval_truth_;  // train indices and labels of the evaluation set
  std::vector<bool> eval_is_old_;
  std::vector<int64_t> eval_val_truth_;  // the validation images' labels (−1 for the others)
  std::vector<bool> eval_val_is_old_;
  std::unique_ptr<EvaluationSet> test_eval_;  // the test split (--eval-on test or both)
  SimGCDLossConfig loss_config_;
  RunProgress progress_;
  ClusterAccuracy last_accuracy_{std::nan(""), std::nan(""), std::nan("")};
  ClusterAccuracy last_test_accuracy_{std::nan(""), std::nan(""), std::nan("")};
};

// The checked config with the MCDL variant's defaults filled in, as config.json records it.
TrainConfig validated(const TrainConfig& config) {
  validate_config(config);
  return with_variant_defaults(config);
}

Trainer::Trainer(TrainConfig config, bool resume)
    : config_(validated(std::move(config))),
      method_(parse_method(config_.method)),
      resume_(resume),
      device_(select_device(config_.device)),
      run_(config_.out),
      data_(load_training_data(config_)),
      settings_(&EngineSettings::matmul_precision, select_matmul_precision(config_.precision, device_)) {
  config_.precision = matmul_precision_name(engine_settings().matmul_precision);
  config_.eval_on = data_.eval_on;
  clusters_ = resolve_clusters(config_, data_, device_);
  begin_run(config_, data_, run_, resume_);
  model_ = build_model(config_, clusters_);
  frozen_fingerprint_ = frozen_fingerprint(model_->backbone);
  model_->to(device_);
  make_optimizer();
  loss_config_.student_temp = config_.student_temp;
  loss_config_.warmup_teacher_temp = config_.warmup_teacher_temp;
  loss_config_.teacher_temp = config_.teacher_temp;
  loss_config_.warmup_teacher_epochs = config_.warmup_teacher_epochs;
  loss_config_.epochs = config_.epochs;
  loss_config_.memax_weight = effective_memax_weight(config_);
  loss_config_.sup_weight = config_.sup_weight;
  if (method_ == Method::simgcd_mcdl) {
    const int64_t n = static_cast<int64_t>(data_.unlabelled.size());
    bank_weak_ = std::make_unique<MemoryBank>(n, clusters_, config_.mu, device_);
    bank_strong_ = std::make_unique<MemoryBank>(n, clusters_, config_.mu, device_);
  }
  const EvaluationOptions eval_options = evaluation_options(config_, data_, device_);
  // The evaluation set: the unlabelled images (or the first --eval-subset of them; none when only
  // the test split is scored), then the validation images, if any (their labels score the
  // validation columns only).
  const size_t n_real = data_.evaluates_unlabelled() ? data_.first_validation : 0;
  const size_t n_eval =
      config_.eval_subset > 0 ? std::min(n_real, static_cast<size_t>(config_.eval_subset)) : n_real;
  const std::vector<int64_t> truth = data_.unlabelled_labels(), val_truth = data_.validation_labels();
  const std::vector<bool> is_old = data_.unlabelled_is_old(), val_is_old = data_.validation_is_old();
  for (size_t p = 0; p < data_.unlabelled.size(); ++p) {
    if (p >= n_eval && p < data_.first_validation) continue;
    eval_indices_.push_back(data_.unlabelled[p]);
    eval_truth_.push_back(truth[p]);
    eval_is_old_.push_back(is_old[p]);
    eval_val_truth_.push_back(val_truth[p]);
    eval_val_is_old_.push_back(val_is_old[p]);
  }
  eval_ = std::make_unique<EvaluationSet>(*data_.cache, eval_indices_, eval_options);
  if (data_.evaluates_test()) test_eval_ = std::make_unique<EvaluationSet>(*data_.test_cache, data_.test, eval_options);
  if (resume_) load_checkpoint();
}

RunSummary Trainer::run() {
  if (method_ == Method::kmeans) return run_kmeans();
  RunSummary summary = run_epochs(
      training_epoch_loop(config_, device_, run_), *optimizer_, progress_,
      {[this](int64_t epoch, MetricsRow& row) { return train_epoch(epoch, row); },
       [this](int64_t epoch, MetricsRow& row, bool final) { evaluate(epoch, row, final); },
       [this](int64_t epochs_completed) { save_checkpoint(epochs_completed); }});
  checkpoints_.wait();  // the last checkpoint is on disk before the run reports it is done
  summary.accuracy = last_accuracy_;
  summary.test_accuracy = last_test_accuracy_;
  return summary;
}

bool Trainer::train_epoch(int64_t epoch, MetricsRow& row) {
  const bool mcdl = method_ == Method::simgcd_mcdl;
  const double mcdl_weight = mcdl ? mcdl_loss_weight(config_, epoch) : 0.0;
  const bool mcdl_losses = mcdl_weight > 0;
  const EpochPlan plan = plan_epoch(config_, data_, epoch);
  const int64_t num_batches = static_cast<int64_t>(plan.batches.size());
  std::vector<ViewKind> views = {ViewKind::train, ViewKind::train};
  if (mcdl) views.push_back(ViewKind::strong);
  BatchLoader loader(*data_.cache, train_loader_options(config_, data_, device_, views));
  loader.start(epoch, plan.batches);

  std::vector<std::string> names = {"loss", "cls", "cluster", "memax", "contrastive", "supcon"};
  if (mcdl) names.insert(names.end(), {"l_sup", "l_semi", "l_self"});
  EpochLog log(config_, epoch, num_batches, names,
               finite_loss_check(names, "total", epoch, run_, progress_.epochs_completed));
  McdlStep mcdl_step(config_);
  LoadedBatch batch;
  while (loader.next(batch)) {
    const int64_t it = batch.batch;
    const BatchLabels meta = batch_labels(plan, data_, it);
    const Tensor& weak1 = batch.views[0];
    const Tensor& weak2 = batch.views[1];
    const HeadOutput out = profiled(device_, "forward", [&] { return model_->forward(concat({weak1, weak2}, 0)); });
    const SimGCDLossTerms simgcd = profiled(device_, "simgcd_losses", [&] {
      return simgcd_loss(out.logits, out.projection, meta.labels, meta.labelled, epoch, loss_config_);
    });
    Tensor total = simgcd.total;
    std::vector<Tensor> terms = {simgcd.cls, simgcd.cluster, simgcd.memax, simgcd.contrastive, simgcd.supcon};
    if (mcdl) {
      const ProfileRange range(device_, "mcdl");
      const McdlBatch step_batch{
          out.logits, out.projection, weak1, batch.views[2], meta.labels, meta.labelled, meta.bank_index, epoch, it};
      const auto logits = [this](const Tensor& images) { return model_->forward(images).logits; };
      const McdlTerms extra = mcdl_step.run(logits, step_batch, *bank_weak_, *bank_strong_, mcdl_losses);
      total = add_mcdl_losses(total, extra, config_.lambda, mcdl_weight);
      terms.insert(terms.end(), {extra.sup, extra.semi, extra.self});
    }
    terms.insert(terms.begin(), total);
    backward_and_step(total, *optimizer_);
    if (!log.record(terms, it, progress_.iterations)) {
      progress_.stop = true;
      break;
    }
  }
  return log.finish(row);
}

// The columns evaluate() fills, in its order: an epoch that is not scored (--eval-every) gets them
// empty, so every metrics row has the same columns.
std::vector<std::string> Trainer::evaluation_columns() const {
  std::vector<std::string> names;
  const bool balanced = data_.dataset.balanced_accuracy;
  if (data_.evaluates_unlabelled()) names = accuracy_columns(balanced);
  if (data_.evaluates_test())
    for (const std::string& name : accuracy_columns(balanced, "test_")) names.push_back(name);
  if (bank_weak_) names.insert(names.end(), {"high", "medium", "low", "high_pseudo_acc", "medium_pseudo_acc"});
  if (data_.has_validation()) names.insert(names.end(), {"val_all", "val_old", "val_new"});
  if (data_.has_validation() && bank_weak_)
    names.insert(names.end(), {"val_high", "val_medium", "val_high_precision", "val_medium_precision"});
  return names;
}

void Trainer::evaluate(int64_t epoch, MetricsRow& row, bool final) {
  if (!final && (config_.eval_every == 0 || (epoch + 1) % config_.eval_every != 0)) {
    for (const std::string& name : evaluation_columns()) row.push_back({name, std::nan("")});
    std::printf("epoch %lld/%lld  %s  lr %.5f\n", static_cast<long long>(epoch + 1),
                static_cast<long long>(config_.epochs), loss_summary(row).c_str(), row[1].second);
    std::fflush(stdout);
    return;
  }
  const ProfileRange range(device_, "evaluation");
  // The unlabelled images (transductive) and the validation images, then the test split.
  const std::vector<int64_t> predictions = eval_->size() > 0 ? eval_->predict(*model_) : std::vector<int64_t>{};
  const KnownLabels known = known_labels(eval_truth_, predictions, eval_is_old_);
  std::string scores;
  if (data_.evaluates_unlabelled()) {
    last_accuracy_ = append_accuracy(row, known, data_.dataset.balanced_accuracy);
    scores = "  " + accuracy_summary(last_accuracy_);
  }
  if (test_eval_) {
    const std::vector<int64_t> test_predictions = test_eval_->predict(*model_);
    scores += append_test_accuracy(row, data_, test_predictions, last_test_accuracy_, final ? &run_ : nullptr);
  }
  std::string buckets;
  if (bank_weak_) {
    const std::vector<int64_t> cluster_to_class =
        known.truth.empty() ? std::vector<int64_t>{} : v2_assignment(known.truth, known.predictions);
    const BucketReport report =
        bucket_report(*bank_weak_, *bank_strong_, config_.mu, data_.unlabelled_labels(), cluster_to_class);
    buckets = append_bucket_columns(row, report);
  }
  const std::string validation = append_validation(row, predictions);
  // The summary line: every loss term, lr, accuracies, buckets and the validation signal.
  const std::string losses = loss_summary(row);
  std::printf("epoch %lld/%lld  %s  lr %.5f%s%s%s\n", static_cast<long long>(epoch + 1),
              static_cast<long long>(config_.epochs), losses.c_str(), row[1].second, scores.c_str(), buckets.c_str(),
              validation.c_str());
  std::fflush(stdout);
  if (!final || !data_.evaluates_unlabelled()) return;
  write_predictions(predictions);
  // The evaluated images' backbone features, row for row with predictions.csv: mcdl_report's
  // embedding (the frozen part is cached, so only the last block runs again).
  write_npy(run_.file("features.npy"), eval_->features(model_->backbone, true));
}

// The validation columns (--val-classes): All / Old / New on the validation images with their own
// v2 assignment, and the memory banks' pseudo-label precision on them, where the truth is the
// user's own labels. Returns the summary line's part.
std::string Trainer::append_validation(MetricsRow& row, const std::vector<int64_t>& predictions) {
  if (!data_.has_validation()) return "";
  const KnownLabels known = known_labels(eval_val_truth_, predictions, eval_val_is_old_);
  const ClusterAccuracy acc = known_accuracy(known, false);
  row.push_back({"val_all", acc.all});
  row.push_back({"val_old", acc.old_classes});
  row.push_back({"val_new", acc.new_classes});
  std::string line = "  val All " + percent(acc.all) + " Old " + percent(acc.old_classes) + " New " +
                     percent(acc.new_classes);
  if (bank_weak_) {
    const BucketReport report = bucket_report(*bank_weak_, *bank_strong_, config_.mu, data_.validation_labels(),
                                              v2_assignment(known.truth, known.predictions));
    row.push_back({"val_high", static_cast<double>(report.known_high)});
    row.push_back({"val_medium", static_cast<double>(report.known_medium)});
    row.push_back({"val_high_precision", report.high_accuracy});
    row.push_back({"val_medium_precision", report.medium_accuracy});
    line += "  precision H " + percent(report.high_accuracy) + " M " + percent(report.medium_accuracy);
  }
  return line;
}

void Trainer::write_predictions(const std::vector<int64_t>& predictions) {
  run_.write_text("predictions.csv",
                  predictions_csv(eval_indices_, predictions, eval_truth_, data_.num_old_classes()));
}

void Trainer::save_checkpoint(int64_t epochs_completed) {
  std::map<std::string, Tensor> tensors = prefixed("model.", trainable_state(*model_, model_->backbone));
  for (auto& [name, t] : prefixed("optimizer.", optimizer_->state_dict())) tensors[name] = t;
  if (bank_weak_) {
    for (auto& [name, t] : prefixed("bank_weak.", bank_weak_->state())) tensors[name] = t;
    for (auto& [name, t] : prefixed("bank_strong.", bank_strong_->state())) tensors[name] = t;
  }
  auto metadata = checkpoint_metadata(config_, progress_, epochs_completed, model_config_to_json(model_->config()));
  metadata[frozen_backbone_key] = frozen_fingerprint_;
  checkpoints_.save(tensors, metadata, epochs_completed - 1, config_.keep_every);
}

// Over the model's current parameter tensors: rebuilt after load_parameters replaces them.
void Trainer::make_optimizer() {
  optimizer_ = std::make_unique<Sgd>(parameter_groups(*model_, config_.lr, config_.weight_decay),
                                     SgdOptions{config_.momentum, false});
}

void Trainer::load_checkpoint() {
  check(run_.has_checkpoint(), "--resume ", run_.path(), ": no checkpoint there yet (", run_.last_checkpoint(),
        ")");
  const SafetensorsFile file = load_safetensors(run_.last_checkpoint());
  load_trainable_state(*model_, model_->backbone, unprefixed("model.", file.tensors), file, run_.last_checkpoint(),
                       frozen_fingerprint_, frozen_source(config_));
  make_optimizer();
  optimizer_->load_state_dict(unprefixed("optimizer.", file.tensors));
  if (bank_weak_) {
    bank_weak_->load_state(unprefixed("bank_weak.", file.tensors));
    bank_strong_->load_state(unprefixed("bank_strong.", file.tensors));
  }
  resume_progress(file, run_, config_, progress_);
}

RunSummary Trainer::run_kmeans() {
  const auto start = Clock::now();
  const Tensor features = eval_->features(model_->backbone, true);
  KMeansOptions options;
  options.k = clusters_;
  options.restarts = effective_kmeans_restarts(config_);
  options.max_iters = effective_kmeans_iters(config_);
  options.seed = config_.seed;
  const KMeansResult result = kmeans(features, options);
  const ClusterAccuracy acc = known_accuracy(known_labels(eval_truth_, result.assignment, eval_is_old_), false);
  MetricsRow row{{"epoch", 0}, {"all", acc.all}, {"old", acc.old_classes}, {"new", acc.new_classes}};
  // Inductive: each test image takes the cluster of its nearest centre.
  std::string test;
  if (test_eval_) {
    const std::vector<int64_t> nearest = nearest_centres(test_eval_->features(model_->backbone, true), result.centres);
    test = append_test_accuracy(row, data_, nearest, last_test_accuracy_, &run_);
  }
  const std::string validation = append_validation(row, result.assignment);
  row.push_back({"inertia", result.inertia});
  row.push_back({"seconds", seconds_since(start)});
  run_.append_metrics(row);
  std::printf("kmeans (k=%lld, %lld restarts)  %s%s%s\n", static_cast<long long>(options.k),
              static_cast<long long>(options.restarts), accuracy_summary(acc).c_str(), test.c_str(), validation.c_str());
  write_predictions(result.assignment);
  RunSummary summary;
  summary.accuracy = acc;
  summary.test_accuracy = last_test_accuracy_;
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace

TrainConfig resume_config(const std::string& run_dir) {
  const std::string saved = (std::filesystem::path(run_dir) / "config.json").string();
  check(std::filesystem::exists(saved), "--resume ", run_dir, ": no config.json there (is it a run directory?)");
  TrainConfig config = config_from_json_file(saved);
  config.out = run_dir;
  // A run saved before the MCDL variants existed ran the paper's MCDL and has no such key.
  std::ifstream in(saved);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.find("\"mcdl-variant\"") == std::string::npos) config.mcdl_variant = "paper";
  // Nor had a run saved before --precision: it computed in fp32.
  if (text.find("\"precision\"") == std::string::npos) config.precision = "fp32";
  // Nor had a run saved before --eval-on: it scored the unlabelled images only.
  if (text.find("\"eval-on\"") == std::string::npos) config.eval_on = "unlabelled";
  return config;
}

RunSummary run_training(const TrainConfig& config, bool resume) {
  if (is_gcd_method(parse_method(config.method))) return run_gcd_training(config, resume);
  Trainer trainer(config, resume);
  return trainer.run();
}

}  // namespace mcdl
