// The GCD baseline (Vaze et al., CVPR 2022) as a base method of the run harness:
//
// 1. Contrastive fine-tuning (contrastive_training.py): the backbone (blocks ≥ grad_from_block
//    trained) with GCD's own projection head (layers/gcd_head.h), two train-transform views per
//    sample from SimGCD's balanced sampler (the same in GCD), the loss of mcdl/method/gcd_loss.h,
//    SGD (lr 0.1, momentum 0.9) with weight decay on EVERY trained parameter (GCD builds no
//    parameter groups: biases, LayerNorm parameters and the head's weight_v all decay), cosine
//    annealing to lr·1e-3 stepped per epoch.
// 2. Features (extract_features.py): the backbone's CLS features of every training image
//    (labelled and unlabelled) through the test transform, L2-normalised.
// 3. Semi-supervised k-means (k_means.py): K = the dataset's class count, the labelled images
//    fixed to their classes, 100 restarts of at most 200 iterations by default
//    (--kmeans-restarts / --kmeans-iters), scored with v2 (and v2b where the dataset reports it)
//    on the unlabelled images.
//
// Deviation from the reference: GCD runs sklearn k-means on the backbone features after every
// epoch and keeps the model with the best Old accuracy on the TEST set for stages 2-3; that
// selection reads test labels. Here, as SimGCD's README recommends, the last epoch is used, and
// each epoch reports its losses only (k-means runs once, after the last epoch).
//
// Its outputs beside the shared ones: predictions.csv of the unlabelled images, the final k-means
// centres in centres.safetensors (mcdl/run/cluster_centres.h, for mcdl_predict), and in the
// checkpoint "model.<DINO name>" for the backbone and "projection_head.<name>" for the head, as
// GCD saves the two, plus "optimizer.*".
//
// GCD has no classifier; for MCDL (--method gcd+mcdl) enable_predictions builds one from GCD's own
// clustering (mcdl/method/kmeans_classifier.h), refitted before the first epoch and after each
// one, saved as "classifier.centres".
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/optim/sgd.h"
#include "layers/gcd_head.h"
#include "layers/vision_transformer.h"
#include "mcdl/evaluation/evaluation_set.h"
#include "mcdl/method/base_method.h"
#include "mcdl/method/kmeans_classifier.h"

namespace mcdl {

class Gcd : public TrainedMethod {
 public:
  explicit Gcd(const MethodContext& context);

  Optimizer& optimizer() override { return *optimizer_; }
  std::vector<std::string> loss_names() const override { return {"contrastive", "supcon"}; }
  std::string total_name() const override { return "gcd"; }
  BaseStep step(const LoadedBatch& batch, const BatchLabels& labels, int64_t epoch) override;

  void enable_predictions(bool resume) override;
  Tensor weak_logits(const BaseStep& step) override;
  Tensor logits(const Tensor& images) override;

  EpochScore score(int64_t epoch, bool final, MetricsRow& row) override;
  std::vector<std::string> score_columns() const override;

  void save(std::map<std::string, Tensor>& tensors) override;
  std::string model_config_json() const override;
  std::string frozen_fingerprint() const override { return frozen_fingerprint_; }
  void load(const SafetensorsFile& file, const std::string& path) override;

 private:
  void make_optimizer();
  // Stage 2: the L2-normalised backbone features of every training image, labelled ones first.
  Tensor features();
  // Stage 3: semi-supervised k-means on them, accuracy, predictions.csv and the centres.
  void cluster(const Tensor& features, MetricsRow& row, EpochScore& score);

  MethodContext context_;
  std::unique_ptr<VisionTransformer> backbone_;
  std::string frozen_fingerprint_;  // of its frozen blocks, as built (mcdl/run/frozen_backbone.h)
  std::unique_ptr<GcdHead> head_;
  std::unique_ptr<Sgd> optimizer_;
  std::unique_ptr<EvaluationSet> images_;       // every training image, labelled first, test transform
  std::unique_ptr<EvaluationSet> test_images_;  // the test split (--eval-on both)
  std::unique_ptr<KMeansClassifier> classifier_;  // after enable_predictions
};

}  // namespace mcdl
