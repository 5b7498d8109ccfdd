#include "mcdl/gcd_baseline.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "data/gcd_split.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "engine/error.h"
#include "engine/ops.h"
#include "engine/optim/schedule.h"
#include "engine/optim/sgd.h"
#include "engine/profile.h"
#include "io/safetensors.h"
#include "layers/backbone_file.h"
#include "layers/gcd_head.h"
#include "layers/vision_transformer.h"
#include "mcdl/cluster_centres.h"
#include "mcdl/checkpoint_writer.h"
#include "mcdl/epoch_loop.h"
#include "mcdl/epoch_plan.h"
#include "mcdl/estimate_k.h"
#include "mcdl/evaluator.h"
#include "mcdl/frozen_backbone.h"
#include "mcdl/gcd_mcdl.h"
#include "mcdl/kmeans.h"
#include "mcdl/progress.h"
#include "mcdl/run_checkpoint.h"
#include "mcdl/run_directory.h"
#include "mcdl/run_start.h"
#include "mcdl/scoring.h"
#include "mcdl/simgcd_loss.h"
#include "mcdl/training_data.h"

namespace mcdl {

GcdLossTerms gcd_loss(const Tensor& outputs, const std::vector<int64_t>& labels, const std::vector<uint8_t>& labelled,
                      double sup_weight, double temperature) {
  const char* op = "gcd_loss";
  check(outputs.defined() && outputs.dim() == 2 && outputs.size(0) > 0 && outputs.size(0) % 2 == 0, op,
        ": outputs must be [2B, C] with B > 0 (view 1's rows, then view 2's), got ",
        outputs.defined() ? outputs.str() : std::string("undefined"));
  const int64_t b = outputs.size(0) / 2;
  check(static_cast<int64_t>(labels.size()) == b && static_cast<int64_t>(labelled.size()) == b, op, ": expected ", b,
        " labels and labelled flags for outputs ", outputs.str(), ", got ", labels.size(), " and ", labelled.size());
  // contrastive_training.py: features = F.normalize(projection_head(backbone(images))), then
  // info_nce_logits (which normalises once more, as info_nce_loss does) on all rows and
  // SupConLoss on cat([f1[mask_lab], f2[mask_lab]]) viewed per sample.
  const Tensor z = l2_normalize(outputs);
  std::vector<int64_t> rows, row_labels;
  for (int64_t i = 0; i < b; ++i) {
    const uint8_t flag = labelled[static_cast<size_t>(i)];
    check(flag <= 1, op, ": labelled flag ", int{flag}, " at ", i, " is not 0 or 1");
    if (flag) rows.push_back(i);
  }
  const size_t count = rows.size();
  for (size_t k = 0; k < count; ++k) rows.push_back(rows[k] + b);
  for (int64_t r : rows) row_labels.push_back(labels[static_cast<size_t>(r % b)]);

  GcdLossTerms t;
  t.contrastive = info_nce_loss(z, temperature);
  if (rows.empty()) {
    // No labelled sample: SupConLoss would average an empty set (NaN); the term is 0.
    t.supcon = zeros({}, z.dtype(), z.device());
  } else {
    std::vector<int64_t> anchors(rows.size());
    for (size_t k = 0; k < anchors.size(); ++k) anchors[k] = static_cast<int64_t>(k);
    t.supcon = supcon_loss(index_select(z, HostIndex(rows, z.device())), row_labels, anchors, 0.07, 0.07);
  }
  t.total = (1 - sup_weight) * t.contrastive + sup_weight * t.supcon;
  return t;
}

namespace {

// With MCDL, the variant's defaults are filled in, as config.json records them.
TrainConfig validated(TrainConfig config) {
  validate_config(config);
  const Method method = parse_method(config.method);
  check(is_gcd_method(method), "run_gcd_training: --method is '", config.method, "', not gcd or gcd+mcdl");
  return method == Method::gcd_mcdl ? with_variant_defaults(config) : config;
}

class GcdRun {
 public:
  GcdRun(TrainConfig config, bool resume);
  RunSummary run();

 private:
  void build_model();
  void make_optimizer();
  bool train_epoch(int64_t epoch, MetricsRow& row);  // true when every batch ran
  // Stage 2: the L2-normalised backbone features of every training image, labelled ones first.
  Tensor features();
  // Stage 3: semi-supervised k-means on them, accuracy, predictions.csv.
  void cluster(const Tensor& features, MetricsRow& row, std::string& summary);
  void finish_epoch(int64_t epoch, MetricsRow& row, bool final);
  void save_checkpoint(int64_t epochs_completed);
  void load_checkpoint();

  TrainConfig config_;
  bool resume_;
  Device device_;
  RunDirectory run_;
  CheckpointWriter checkpoints_{run_};  // after run_: written in the background, waited for before run_ goes
  TrainingData data_;
  ScopedEngineSettings settings_;  // the run's matmul precision, until its last product
  int64_t clusters_ = 0;  // ss-k-means' K (--clusters)
  std::unique_ptr<VisionTransformer> backbone_;
  std::string frozen_fingerprint_;  // of its frozen blocks, as built (mcdl/frozen_backbone.h)
  std::unique_ptr<GcdHead> head_;
  std::unique_ptr<Sgd> optimizer_;
  std::unique_ptr<EvaluationSet> images_;  // every training image, labelled first, test transform
  std::unique_ptr<EvaluationSet> test_images_;  // the test split (--eval-on both)
  std::unique_ptr<GcdMcdl> mcdl_;          // --method gcd+mcdl only
  RunProgress progress_;
  ClusterAccuracy accuracy_{std::nan(""), std::nan(""), std::nan("")};
  ClusterAccuracy test_accuracy_{std::nan(""), std::nan(""), std::nan("")};
};

GcdRun::GcdRun(TrainConfig config, bool resume)
    : config_(validated(std::move(config))),
      resume_(resume),
      device_(select_device(config_.device)),
      run_(config_.out),
      data_(load_training_data(config_)),
      settings_(&EngineSettings::matmul_precision, select_matmul_precision(config_.precision, device_)) {
  config_.precision = matmul_precision_name(engine_settings().matmul_precision);
  config_.eval_on = data_.eval_on;
  clusters_ = resolve_clusters(config_, data_, device_);
  begin_run(config_, data_, run_, resume_);
  build_model();
  make_optimizer();
  std::vector<int64_t> images = data_.labelled;
  images.insert(images.end(), data_.unlabelled.begin(), data_.unlabelled.end());
  const EvaluationOptions eval_options = evaluation_options(config_, data_, device_);
  images_ = std::make_unique<EvaluationSet>(*data_.cache, images, eval_options);
  if (data_.evaluates_test()) test_images_ = std::make_unique<EvaluationSet>(*data_.test_cache, data_.test, eval_options);
  if (parse_method(config_.method) == Method::gcd_mcdl) {
    mcdl_ = std::make_unique<GcdMcdl>(config_, data_, clusters_, device_);
    if (!resume_) mcdl_->fit(features());  // the classifier before the first epoch (a resume loads it)
  }
  if (resume_) load_checkpoint();
}

// The backbone from --weights (or a fresh one from --model) and GCD's head, initialised from
// the seed; then GCD's freezing rule (blocks ≥ grad_from_block and the head train).
void GcdRun::build_model() {
  const BackboneSource source = backbone_source(config_);
  const VitConfig& vit = source.config;
  backbone_ = std::make_unique<VisionTransformer>(vit);
  backbone_->initialize(config_.seed);
  if (!source.tensors.empty()) backbone_->load_parameters(source.tensors);
  head_ = std::make_unique<GcdHead>(
      vit.embed_dim, GcdHeadConfig{config_.head_hidden, config_.head_bottleneck, config_.gcd_head_out,
                                   config_.head_init_std});
  head_->initialize(config_.seed);
  backbone_->set_grad_from_block(first_trained_block(config_, vit.depth));
  frozen_fingerprint_ = frozen_fingerprint(*backbone_);
  head_->set_trainable(true);
  backbone_->to(device_);
  head_->to(device_);
}

// GCD's SGD over projection_head.parameters() + model.parameters(): one group, weight decay on
// every parameter that trains. Over the current parameter tensors: rebuilt after loading them.
void GcdRun::make_optimizer() {
  ParamGroup all{"all", {}, config_.lr, config_.weight_decay};
  for (auto& p : backbone_->trainable_parameters()) all.params.push_back({"model." + p.name, p.tensor});
  for (auto& p : head_->trainable_parameters()) all.params.push_back({"projection_head." + p.name, p.tensor});
  optimizer_ = std::make_unique<Sgd>(std::vector<ParamGroup>{all}, SgdOptions{config_.momentum, false});
}

RunSummary GcdRun::run() {
  RunSummary summary = run_epochs(
      training_epoch_loop(config_, device_, run_), *optimizer_, progress_,
      {[this](int64_t epoch, MetricsRow& row) { return train_epoch(epoch, row); },
       [this](int64_t epoch, MetricsRow& row, bool final) { finish_epoch(epoch, row, final); },
       [this](int64_t epochs_completed) { save_checkpoint(epochs_completed); }});
  checkpoints_.wait();  // the last checkpoint is on disk before the run reports it is done
  summary.accuracy = accuracy_;
  summary.test_accuracy = test_accuracy_;
  return summary;
}

// Each epoch reports its losses; the last one also clusters (GCD evaluates only at the end).
// With MCDL every epoch refits the classifier and reports the buckets.
void GcdRun::finish_epoch(int64_t epoch, MetricsRow& row, bool final) {
  const std::string line = loss_summary(row);
  std::string clustering;
  const Tensor image_features = final || mcdl_ ? features() : Tensor();
  if (final) {
    cluster(image_features, row, clustering);
  } else {
    const bool balanced = data_.dataset.balanced_accuracy;
    for (const std::string& name : accuracy_columns(balanced)) row.push_back({name, std::nan("")});
    if (test_images_)
      for (const std::string& name : accuracy_columns(balanced, "test_")) row.push_back({name, std::nan("")});
  }
  if (mcdl_) clustering += mcdl_->append_buckets(row, mcdl_->fit(image_features));
  std::printf("epoch %lld/%lld  %s  lr %.5f%s\n", static_cast<long long>(epoch + 1),
              static_cast<long long>(config_.epochs), line.c_str(), row[1].second, clustering.c_str());
  std::fflush(stdout);
}

bool GcdRun::train_epoch(int64_t epoch, MetricsRow& row) {
  const EpochPlan plan = plan_epoch(config_, data_, epoch);
  const int64_t num_batches = static_cast<int64_t>(plan.batches.size());
  std::vector<ViewKind> views = {ViewKind::train, ViewKind::train};
  if (mcdl_) views.push_back(ViewKind::strong);  // MCDL's strong view (mcdl-spec §2)
  BatchLoader loader(*data_.cache, train_loader_options(config_, data_, device_, views));
  loader.start(epoch, plan.batches);

  std::vector<std::string> names = {"loss", "contrastive", "supcon"};
  if (mcdl_) names.insert(names.end(), {"l_sup", "l_semi", "l_self"});
  const double mcdl_weight = mcdl_ ? mcdl_loss_weight(config_, epoch) : 0.0;
  EpochLog log(config_, epoch, num_batches, names,
               finite_loss_check(names, "gcd", epoch, run_, progress_.epochs_completed));
  LoadedBatch batch;
  while (loader.next(batch)) {
    const int64_t it = batch.batch;
    const BatchLabels meta = batch_labels(plan, data_, it);
    Tensor features;
    const Tensor outputs = profiled(device_, "forward", [&] {
      features = backbone_->forward(concat({batch.views[0], batch.views[1]}, 0));
      return head_->forward(features);
    });
    const GcdLossTerms loss = gcd_loss(outputs, meta.labels, meta.labelled, config_.sup_weight, config_.gcd_temperature);
    Tensor total = loss.total;
    std::vector<Tensor> terms = {loss.total, loss.contrastive, loss.supcon};
    if (mcdl_) {
      const ProfileRange range(device_, "mcdl");
      const McdlTerms extra = mcdl_->step(*backbone_, features, outputs, batch.views[0], batch.views[2], meta, epoch,
                                          it, mcdl_weight > 0);
      total = add_mcdl_losses(total, extra, config_.lambda, mcdl_weight);
      terms = {total, loss.contrastive, loss.supcon, extra.sup, extra.semi, extra.self};
    }
    backward_and_step(total, *optimizer_);
    if (!log.record(terms, it, progress_.iterations)) {
      progress_.stop = true;
      break;
    }
  }
  return log.finish(row);
}

// extract_features.py: every training image through the test transform, labelled ones first;
// their L2-normalised CLS features (on the CPU).
Tensor GcdRun::features() {
  const ProfileRange range(device_, "evaluation");
  return images_->features(*backbone_, true);
}

// k_means.py: the labelled rows fixed to their classes.
void GcdRun::cluster(const Tensor& features, MetricsRow& row, std::string& summary) {
  const ProfileRange range(device_, "evaluation");
  const int64_t num_labelled = static_cast<int64_t>(data_.labelled.size());
  std::vector<int64_t> labelled_rows(static_cast<size_t>(num_labelled)), labelled_classes;
  for (int64_t i = 0; i < num_labelled; ++i) {
    labelled_rows[static_cast<size_t>(i)] = i;
    labelled_classes.push_back(data_.label(data_.labelled[static_cast<size_t>(i)]));
  }
  KMeansOptions options;
  options.k = clusters_;
  options.restarts = effective_kmeans_restarts(config_);
  options.max_iters = effective_kmeans_iters(config_);
  options.seed = config_.seed;
  const KMeansResult result = semi_supervised_kmeans(features.to(device_), labelled_rows, labelled_classes, options);
  const std::vector<int64_t> predictions(result.assignment.begin() + num_labelled, result.assignment.end());

  const std::vector<int64_t> truth = data_.unlabelled_labels();
  accuracy_ = append_accuracy(row, known_labels(truth, predictions, data_.unlabelled_is_old()),
                              data_.dataset.balanced_accuracy);
  summary = "  ss-k-means (k=" + std::to_string(options.k) + ", " + std::to_string(options.restarts) +
            " restarts)  " + accuracy_summary(accuracy_);
  if (test_images_) {
    // Inductive: each test image takes the cluster of its nearest centre.
    const std::vector<int64_t> nearest = nearest_centres(test_images_->features(*backbone_, true), result.centres);
    summary += append_test_accuracy(row, data_, nearest, test_accuracy_, &run_);
  }

  run_.write_text("predictions.csv",
                  predictions_csv(data_.unlabelled, predictions, truth, data_.num_old_classes()));
  save_cluster_centres(run_, result.centres, progress_.iterations);  // for mcdl_predict
}

void GcdRun::save_checkpoint(int64_t epochs_completed) {
  std::map<std::string, Tensor> tensors;
  for (auto& [name, t] : prefixed("model.", trainable_state(*backbone_, *backbone_))) tensors[name] = t;
  for (auto& [name, t] : prefixed("projection_head.", head_->state_dict())) tensors[name] = t;
  for (auto& [name, t] : prefixed("optimizer.", optimizer_->state_dict())) tensors[name] = t;
  if (mcdl_) mcdl_->save(tensors);
  auto metadata = checkpoint_metadata(config_, progress_, epochs_completed,
                                      model_config_to_json(ModelConfig{backbone_->config(), HeadConfig{}}));
  metadata[frozen_backbone_key] = frozen_fingerprint_;
  checkpoints_.save(tensors, metadata, epochs_completed - 1, config_.keep_every);
}

void GcdRun::load_checkpoint() {
  check(run_.has_checkpoint(), "--resume ", run_.path(), ": no checkpoint there yet (", run_.last_checkpoint(),
        ")");
  const SafetensorsFile file = load_safetensors(run_.last_checkpoint());
  load_trainable_state(*backbone_, *backbone_, unprefixed("model.", file.tensors), file, run_.last_checkpoint(),
                       frozen_fingerprint_, frozen_source(config_));
  head_->load_parameters(unprefixed("projection_head.", file.tensors));
  make_optimizer();
  optimizer_->load_state_dict(unprefixed("optimizer.", file.tensors));
  if (mcdl_) mcdl_->load(file.tensors);
  resume_progress(file, run_, config_, progress_);
}

}  // namespace

RunSummary run_gcd_training(const TrainConfig& config, bool resume) {
  GcdRun run(config, resume);
  return run.run();
}

}  // namespace mcdl
