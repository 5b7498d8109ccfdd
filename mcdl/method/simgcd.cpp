#include "mcdl/method/simgcd.h"

#include <cmath>
#include <cstdio>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/optim/ema.h"
#include "engine/profile.h"
#include "io/npy.h"
#include "mcdl/run/accuracy_report.h"
#include "mcdl/run/frozen_backbone.h"
#include "mcdl/run/run_checkpoint.h"
#include "mcdl/run/run_start.h"

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

SimGCDLossConfig loss_config(const TrainConfig& config) {
  SimGCDLossConfig c;
  c.student_temp = config.student_temp;
  c.warmup_teacher_temp = config.warmup_teacher_temp;
  c.teacher_temp = config.teacher_temp;
  c.warmup_teacher_epochs = config.warmup_teacher_epochs;
  c.epochs = config.epochs;
  c.memax_weight = config.memax_weight.value();
  c.sup_weight = config.sup_weight;
  return c;
}

}  // namespace

ScoredImages::ScoredImages(const TrainConfig& config, const TrainingData& data, Device device) {
  const EvaluationOptions options = evaluation_options(config, data, device);
  const size_t n_real = data.evaluates_unlabelled() ? data.first_validation : 0;
  const size_t n_eval =
      config.eval_subset > 0 ? std::min(n_real, static_cast<size_t>(config.eval_subset)) : n_real;
  const std::vector<int64_t> all_truth = data.unlabelled_labels(), all_val_truth = data.validation_labels();
  const std::vector<bool> all_is_old = data.unlabelled_is_old(), all_val_is_old = data.validation_is_old();
  for (size_t p = 0; p < data.unlabelled.size(); ++p) {
    if (p >= n_eval && p < data.first_validation) continue;
    indices.push_back(data.unlabelled[p]);
    truth.push_back(all_truth[p]);
    is_old.push_back(all_is_old[p]);
    val_truth.push_back(all_val_truth[p]);
    val_is_old.push_back(all_val_is_old[p]);
  }
  set = std::make_unique<EvaluationSet>(*data.cache, indices, options);
  if (data.evaluates_test()) test_set = std::make_unique<EvaluationSet>(*data.test_cache, data.test, options);
}

EpochPredictions ScoredImages::predictions(std::vector<int64_t> clusters) const {
  return {std::move(clusters), truth, is_old, val_truth, val_is_old};
}

void ScoredImages::write_predictions(const MethodContext& context, const std::vector<int64_t>& clusters) const {
  context.run.write_text("predictions.csv",
                         predictions_csv(indices, clusters, truth, context.data.num_old_classes()));
}

SimGcd::SimGcd(const MethodContext& context)
    : context_(context),
      model_(build_model(context.config, context.clusters)),
      frozen_fingerprint_(mcdl::frozen_fingerprint(model_->backbone)),
      loss_config_(loss_config(context.config)),
      images_(context.config, context.data, context.device) {
  model_->to(context.device);
  if (context.config.ema_teacher) {
    teacher_ = build_model(context.config, context.clusters);
    teacher_->to(context.device);
    ema_update(teacher_->trainable_parameters(), model_->trainable_parameters(), 0.0);  // starts as the model
  }
  make_optimizer();
}

// Over the model's current parameter tensors: rebuilt after load_parameters replaces them.
void SimGcd::make_optimizer() {
  optimizer_ = std::make_unique<Sgd>(parameter_groups(*model_, context_.config.lr, context_.config.weight_decay),
                                     SgdOptions{context_.config.momentum, false});
}

std::vector<std::string> SimGcd::loss_names() const { return {"cls", "cluster", "memax", "contrastive", "supcon"}; }

BaseStep SimGcd::step(const LoadedBatch& batch, const BatchLabels& labels, int64_t epoch) {
  const Device device = context_.device;
  const Tensor weak = concat({batch.views[0], batch.views[1]}, 0);
  // Two blocks of the same images: a shard takes both views of its images.
  const HeadOutput out = profiled(device, "forward", [&] { return forward(*model_, weak, 2); });
  const Tensor teacher = teacher_forward(weak, 2);
  const SimGCDLossTerms loss = profiled(device, "simgcd_losses", [&] {
    return simgcd_loss(out.logits, out.projection, labels.labels, labels.labelled, epoch, loss_config_, teacher);
  });
  BaseStep step;
  step.total = loss.total;
  step.terms = {loss.cls, loss.cluster, loss.memax, loss.contrastive, loss.supcon};
  step.projection = out.projection;
  step.logits = out.logits;
  step.teacher_logits = teacher;
  return step;
}

void SimGcd::after_step() {
  if (teacher_) ema_update(teacher_->trainable_parameters(), model_->trainable_parameters(), *context_.config.ema_teacher);
}

HeadOutput SimGcd::forward(SimGCDModel& model, const Tensor& images, int64_t blocks) {
  const std::vector<Tensor> out = context_.shards.forward(
      images,
      [&model](const Tensor& rows) {
        HeadOutput head = model.forward(rows);
        return std::vector<Tensor>{head.projection, head.logits};
      },
      blocks);
  return {out[0], out[1]};
}

Tensor SimGcd::logits(const Tensor& images) { return forward(*model_, images).logits; }

Tensor SimGcd::teacher_logits(const Tensor& images) { return teacher_forward(images, 1); }

Tensor SimGcd::teacher_forward(const Tensor& images, int64_t blocks) {
  if (!teacher_) return Tensor();
  NoGradGuard no_grad;
  return profiled(context_.device, "teacher", [&] { return forward(*teacher_, images, blocks).logits; });
}

std::vector<std::string> SimGcd::score_columns() const {
  std::vector<std::string> names;
  const bool balanced = context_.data.dataset.balanced_accuracy;
  if (context_.data.evaluates_unlabelled()) names = accuracy_columns(balanced);
  if (context_.data.evaluates_test())
    for (const std::string& name : accuracy_columns(balanced, "test_")) names.push_back(name);
  return names;
}

EpochScore SimGcd::score(int64_t epoch, bool final, MetricsRow& row) {
  const TrainConfig& config = context_.config;
  const TrainingData& data = context_.data;
  EpochScore score;
  if (!final && (config.eval_every == 0 || (epoch + 1) % config.eval_every != 0)) {
    for (const std::string& name : score_columns()) row.push_back({name, std::nan("")});
    return score;
  }
  const ProfileRange range(context_.device, "evaluation");
  double& features_seconds = score.phases.features_seconds;
  double& cluster_seconds = score.phases.cluster_seconds;
  // The unlabelled images (transductive) and the validation images, then the test split.
  const std::vector<int64_t> predictions = timed(features_seconds, [&] {
    return images_.set->size() > 0 ? images_.set->predict(*model_) : std::vector<int64_t>{};
  });
  if (data.evaluates_unlabelled()) {
    score.accuracy = timed(cluster_seconds, [&] {
      return append_accuracy(row, known_labels(images_.truth, predictions, images_.is_old),
                             data.dataset.balanced_accuracy);
    });
    score.line = "  " + accuracy_summary(*score.accuracy);
  }
  if (images_.test_set) {
    const std::vector<int64_t> test_predictions =
        timed(features_seconds, [&] { return images_.test_set->predict(*model_); });
    ClusterAccuracy test_accuracy;
    score.line +=
        timed(cluster_seconds, [&] { return append_test_accuracy(row, data, test_predictions, test_accuracy); });
    score.test_accuracy = test_accuracy;
    if (final) write_test_predictions(context_.run, data, test_predictions);
  }
  if (final && data.evaluates_unlabelled()) {
    images_.write_predictions(context_, predictions);
    // The evaluated images' backbone features, row for row with predictions.csv: mcdl_report's
    // embedding (the frozen part is cached, so only the last block runs again).
    // Every rank computes them (the evaluation is split over the ranks); rank 0 writes them.
    const Tensor features = timed(features_seconds, [&] { return images_.set->features(model_->backbone, true); });
    if (context_.run.writes()) write_npy(context_.run.file("features.npy"), features);
  }
  score.predictions = images_.predictions(predictions);
  return score;
}

void SimGcd::save(std::map<std::string, Tensor>& tensors) {
  for (auto& [name, t] : prefixed("model.", trainable_state(*model_, model_->backbone))) tensors[name] = t;
  for (auto& [name, t] : prefixed("optimizer.", optimizer_->state_dict())) tensors[name] = t;
  if (teacher_)
    for (auto& [name, t] : prefixed("teacher.", trainable_state(*teacher_, teacher_->backbone))) tensors[name] = t;
}

std::string SimGcd::model_config_json() const { return model_config_to_json(model_->config()); }

void SimGcd::load(const SafetensorsFile& file, const std::string& path) {
  load_trainable_state(*model_, model_->backbone, unprefixed("model.", file.tensors), file, path, frozen_fingerprint_,
                       frozen_source(context_.config));
  make_optimizer();
  optimizer_->load_state_dict(unprefixed("optimizer.", file.tensors));
  if (teacher_)
    load_trainable_state(*teacher_, teacher_->backbone, unprefixed("teacher.", file.tensors), file, path,
                         frozen_fingerprint_, frozen_source(context_.config));
}

}  // namespace mcdl
