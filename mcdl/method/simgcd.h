// SimGCD (Wen et al., ICCV 2023) as a base method of the run harness: the backbone with its
// cosine-classifier head (layers/simgcd_model.h), SimGCD's loss on two weak views
// (mcdl/method/simgcd_loss.h), SGD with weight decay on weights only, and an evaluation of the
// head's predictions on the unlabelled images (and the validation images, and the test split)
// every --eval-every epochs and at the end. Its head gives MCDL per-sample predictions. With
// --ema-teacher, an EMA of the model gives the self-distillation its targets (and MCDL's banks
// their predictions); the model itself is what is evaluated and saved as the result.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/optim/sgd.h"
#include "layers/simgcd_model.h"
#include "mcdl/evaluation/evaluation_set.h"
#include "mcdl/method/base_method.h"
#include "mcdl/method/simgcd_loss.h"

namespace mcdl {

// The run's images that an evaluation scores: the unlabelled images (the first --eval-subset of
// them; none when only the test split is scored), then the validation images, with their
// labels; and the test split where it is scored. Shared by SimGCD and k-means.
struct ScoredImages {
  ScoredImages(const TrainConfig& config, const TrainingData& data, Device device);
  std::vector<int64_t> indices, truth;  // train indices and labels of the evaluation set
  std::vector<bool> is_old;
  std::vector<int64_t> val_truth;  // the validation images' labels (−1 for the others)
  std::vector<bool> val_is_old;
  std::unique_ptr<EvaluationSet> set, test_set;  // test_set: null unless the test split is scored
  EpochPredictions predictions(std::vector<int64_t> clusters) const;
  // predictions.csv of the evaluation set's clusters.
  void write_predictions(const MethodContext& context, const std::vector<int64_t>& clusters) const;
};

class SimGcd : public TrainedMethod {
 public:
  explicit SimGcd(const MethodContext& context);

  Optimizer& optimizer() override { return *optimizer_; }
  std::vector<std::string> loss_names() const override;
  std::string total_name() const override { return "total"; }
  BaseStep step(const LoadedBatch& batch, const BatchLabels& labels, int64_t epoch) override;
  void after_step() override;

  void enable_predictions(bool) override {}  // the head predicts
  Tensor weak_logits(const BaseStep& step) override { return step.logits; }
  Tensor logits(const Tensor& images) override;
  Tensor teacher_logits(const Tensor& images) override;

  EpochScore score(int64_t epoch, bool final, MetricsRow& row) override;
  std::vector<std::string> score_columns() const override;

  void save(std::map<std::string, Tensor>& tensors) override;
  std::string model_config_json() const override;
  std::string frozen_fingerprint() const override { return frozen_fingerprint_; }
  void load(const SafetensorsFile& file, const std::string& path) override;

 private:
  void make_optimizer();
  // The model's outputs of a training step's images, through the run's shards; `blocks` as
  // Shards::forward's (2 for the weak views [weak1; weak2]).
  HeadOutput forward(SimGCDModel& model, const Tensor& images, int64_t blocks = 1);
  // The EMA teacher's logits, without a graph (undefined without a teacher).
  Tensor teacher_forward(const Tensor& images, int64_t blocks);

  MethodContext context_;
  std::unique_ptr<SimGCDModel> model_;
  // --ema-teacher: the same model with the EMA of the trained parameters (null: none). The frozen
  // blocks are its own copy of the same weights.
  std::unique_ptr<SimGCDModel> teacher_;
  std::string frozen_fingerprint_;  // of the backbone's frozen blocks, as built (mcdl/run/frozen_backbone.h)
  std::unique_ptr<Sgd> optimizer_;
  SimGCDLossConfig loss_config_;
  ScoredImages images_;
};

}  // namespace mcdl
