#include "mcdl/method/gcd.h"

#include <cmath>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/profile.h"
#include "mcdl/method/gcd_loss.h"
#include "mcdl/run/accuracy_report.h"
#include "mcdl/run/cluster_centres.h"
#include "mcdl/run/frozen_backbone.h"
#include "mcdl/run/run_checkpoint.h"
#include "mcdl/run/run_start.h"

namespace mcdl {
namespace {

// k-means as GCD's final clustering runs it: K, restarts, iterations and seed.
KMeansOptions clustering_options(const TrainConfig& config, int64_t clusters) {
  KMeansOptions options;
  options.k = clusters;
  options.restarts = config.kmeans_restarts.value();
  options.max_iters = config.kmeans_iters.value();
  options.seed = config.seed;
  options.world = multi_process_world();  // several processes share the restarts
  return options;
}

// The labelled images' rows 0..L−1 of the feature matrix (labelled images first) and their classes.
void labelled_rows(const TrainingData& data, std::vector<int64_t>& rows, std::vector<int64_t>& classes) {
  for (size_t i = 0; i < data.labelled.size(); ++i) {
    rows.push_back(static_cast<int64_t>(i));
    classes.push_back(data.label(data.labelled[i]));
  }
}

}  // namespace

// The backbone from --weights (or a fresh one from --model) and GCD's head, initialised from
// the seed; then GCD's freezing rule (blocks ≥ grad_from_block and the head train).
Gcd::Gcd(const MethodContext& context) : context_(context) {
  const TrainConfig& config = context.config;
  const BackboneSource source = backbone_source(config);
  const VitConfig& vit = source.config;
  backbone_ = std::make_unique<VisionTransformer>(vit);
  backbone_->initialize(config.seed);
  if (!source.tensors.empty()) backbone_->load_parameters(source.tensors);
  head_ = std::make_unique<GcdHead>(
      vit.embed_dim,
      GcdHeadConfig{config.head_hidden, config.head_bottleneck, config.gcd_head_out, config.head_init_std});
  head_->initialize(config.seed);
  backbone_->set_grad_from_block(first_trained_block(config, vit.depth));
  frozen_fingerprint_ = mcdl::frozen_fingerprint(*backbone_);
  head_->set_trainable(true);
  backbone_->to(context.device);
  head_->to(context.device);
  make_optimizer();
  std::vector<int64_t> images = context.data.labelled;
  images.insert(images.end(), context.data.unlabelled.begin(), context.data.unlabelled.end());
  const EvaluationOptions eval_options = evaluation_options(config, context.data, context.device);
  images_ = std::make_unique<EvaluationSet>(*context.data.cache, images, eval_options);
  if (context.data.evaluates_test())
    test_images_ = std::make_unique<EvaluationSet>(*context.data.test_cache, context.data.test, eval_options);
}

// GCD's SGD over projection_head.parameters() + model.parameters(): one group, weight decay on
// every parameter that trains. Over the current parameter tensors: rebuilt after loading them.
void Gcd::make_optimizer() {
  const TrainConfig& config = context_.config;
  ParamGroup all{"all", {}, config.lr, config.weight_decay};
  for (auto& p : backbone_->trainable_parameters()) all.params.push_back({"model." + p.name, p.tensor});
  for (auto& p : head_->trainable_parameters()) all.params.push_back({"projection_head." + p.name, p.tensor});
  optimizer_ = std::make_unique<Sgd>(std::vector<ParamGroup>{all}, SgdOptions{config.momentum, false});
}

BaseStep Gcd::step(const LoadedBatch& batch, const BatchLabels& labels, int64_t) {
  BaseStep step;
  const Tensor outputs = profiled(context_.device, "forward", [&] {
    const std::vector<Tensor> out =
        context_.shards.forward(concat({batch.views[0], batch.views[1]}, 0), [this](const Tensor& rows) {
          const Tensor features = backbone_->forward(rows);
          return std::vector<Tensor>{features, head_->forward(features)};
        }, 2);  // two blocks of the same images: a shard takes both views of its images
    step.features = out[0];
    return out[1];
  });
  const GcdLossTerms loss =
      gcd_loss(outputs, labels.labels, labels.labelled, context_.config.sup_weight, context_.config.gcd_temperature);
  step.total = loss.total;
  step.terms = {loss.contrastive, loss.supcon};
  step.projection = outputs;  // MCDL's L_sup acts where GCD's SupCon does
  return step;
}

void Gcd::enable_predictions(bool resume) {
  std::vector<int64_t> rows, classes;
  labelled_rows(context_.data, rows, classes);
  classifier_ = std::make_unique<KMeansClassifier>(std::move(rows), std::move(classes),
                                                   clustering_options(context_.config, context_.clusters),
                                                   context_.device);
  if (!resume) classifier_->fit(features());  // the classifier before the first epoch (a resume loads it)
}

Tensor Gcd::weak_logits(const BaseStep& step) {
  NoGradGuard no_grad;  // the banks read the weak views' predictions detached (docs/method.md §2)
  return classifier_->logits(step.features.detach());
}

Tensor Gcd::logits(const Tensor& images) {
  return context_.shards.forward(images,
                                 [this](const Tensor& rows) { return classifier_->logits(backbone_->forward(rows)); });
}

std::vector<std::string> Gcd::score_columns() const {
  const bool balanced = context_.data.dataset.balanced_accuracy;
  std::vector<std::string> names = accuracy_columns(balanced);
  if (test_images_)
    for (const std::string& name : accuracy_columns(balanced, "test_")) names.push_back(name);
  return names;
}

// Each epoch reports its losses; the last one also clusters (GCD evaluates only at the end).
// With MCDL's classifier every epoch refits it, and its clusters are the epoch's predictions.
EpochScore Gcd::score(int64_t, bool final, MetricsRow& row) {
  EpochScore score;
  const Tensor image_features =
      final || classifier_ ? timed(score.phases.features_seconds, [&] { return features(); }) : Tensor();
  if (final) {
    cluster(image_features, row, score);
  } else {
    for (const std::string& name : score_columns()) row.push_back({name, std::nan("")});
  }
  if (classifier_) {
    const std::vector<int64_t> all =
        timed(score.phases.cluster_seconds, [&] { return classifier_->fit(image_features); });
    const size_t num_unlabelled = context_.data.unlabelled.size();
    EpochPredictions predictions;
    predictions.predictions.assign(all.end() - static_cast<std::ptrdiff_t>(num_unlabelled), all.end());
    predictions.truth = context_.data.unlabelled_labels();
    predictions.is_old = context_.data.unlabelled_is_old();
    score.predictions = std::move(predictions);
  }
  return score;
}

// extract_features.py: every training image through the test transform, labelled ones first;
// their L2-normalised CLS features (on the CPU).
Tensor Gcd::features() {
  const ProfileRange range(context_.device, "evaluation");
  return images_->features(*backbone_, true);
}

// k_means.py: the labelled rows fixed to their classes.
void Gcd::cluster(const Tensor& features, MetricsRow& row, EpochScore& score) {
  const ProfileRange range(context_.device, "evaluation");
  const TrainingData& data = context_.data;
  double& cluster_seconds = score.phases.cluster_seconds;
  std::vector<int64_t> rows, classes;
  labelled_rows(data, rows, classes);
  const KMeansOptions options = clustering_options(context_.config, context_.clusters);
  const KMeansResult result = timed(cluster_seconds, [&] {
    return semi_supervised_kmeans(features.to(context_.device), rows, classes, options);
  });
  const std::vector<int64_t> predictions(result.assignment.begin() + static_cast<std::ptrdiff_t>(rows.size()),
                                         result.assignment.end());

  const std::vector<int64_t> truth = data.unlabelled_labels();
  score.accuracy = timed(cluster_seconds, [&] {
    return append_accuracy(row, known_labels(truth, predictions, data.unlabelled_is_old()),
                           data.dataset.balanced_accuracy);
  });
  score.line = "  ss-k-means (k=" + std::to_string(options.k) + ", " + std::to_string(options.restarts) +
               " restarts)  " + accuracy_summary(*score.accuracy);
  if (test_images_) {
    // Inductive: each test image takes the cluster of its nearest centre.
    const Tensor test_features =
        timed(score.phases.features_seconds, [&] { return test_images_->features(*backbone_, true); });
    const std::vector<int64_t> nearest =
        timed(cluster_seconds, [&] { return nearest_centres(test_features, result.centres); });
    ClusterAccuracy test_accuracy;
    score.line += timed(cluster_seconds, [&] { return append_test_accuracy(row, data, nearest, test_accuracy); });
    score.test_accuracy = test_accuracy;
    write_test_predictions(context_.run, data, nearest);
  }
  context_.run.write_text("predictions.csv", predictions_csv(data.unlabelled, predictions, truth, data.num_old_classes()));
  save_cluster_centres(context_.run, result.centres, context_.progress.iterations);  // for mcdl_predict
}

void Gcd::save(std::map<std::string, Tensor>& tensors) {
  for (auto& [name, t] : prefixed("model.", trainable_state(*backbone_, *backbone_))) tensors[name] = t;
  for (auto& [name, t] : prefixed("projection_head.", head_->state_dict())) tensors[name] = t;
  for (auto& [name, t] : prefixed("optimizer.", optimizer_->state_dict())) tensors[name] = t;
  if (classifier_)
    for (auto& [name, t] : prefixed("classifier.", classifier_->state())) tensors[name] = t;
}

std::string Gcd::model_config_json() const {
  return model_config_to_json(ModelConfig{backbone_->config(), HeadConfig{}});
}

void Gcd::load(const SafetensorsFile& file, const std::string& path) {
  load_trainable_state(*backbone_, *backbone_, unprefixed("model.", file.tensors), file, path, frozen_fingerprint_,
                       frozen_source(context_.config));
  head_->load_parameters(unprefixed("projection_head.", file.tensors));
  make_optimizer();
  optimizer_->load_state_dict(unprefixed("optimizer.", file.tensors));
  if (classifier_) classifier_->load_state(unprefixed("classifier.", file.tensors));
}

}  // namespace mcdl
