#include "mcdl/gcd_mcdl.h"

#include "engine/autograd.h"
#include "mcdl/cluster_accuracy.h"
#include "mcdl/run_checkpoint.h"
#include "mcdl/scoring.h"

namespace mcdl {
namespace {

// The classifier's first fit as GCD's final clustering runs (K, restarts, iterations, seed),
// over the labelled images' rows 0..L−1 of the feature matrix.
KMeansClassifier make_classifier(const TrainConfig& config, const TrainingData& data, int64_t clusters,
                                 Device device) {
  std::vector<int64_t> rows, classes;
  for (size_t i = 0; i < data.labelled.size(); ++i) {
    rows.push_back(static_cast<int64_t>(i));
    classes.push_back(data.label(data.labelled[i]));
  }
  KMeansOptions first_fit;
  first_fit.k = clusters;
  first_fit.restarts = effective_kmeans_restarts(config);
  first_fit.max_iters = effective_kmeans_iters(config);
  first_fit.seed = config.seed;
  return KMeansClassifier(std::move(rows), std::move(classes), first_fit, device);
}

}  // namespace

GcdMcdl::GcdMcdl(const TrainConfig& config, const TrainingData& data, int64_t clusters, Device device)
    : config_(config),
      truth_(data.unlabelled_labels()),
      is_old_(data.unlabelled_is_old()),
      classifier_(make_classifier(config, data, clusters, device)),
      bank_weak_(static_cast<int64_t>(data.unlabelled.size()), clusters, config.mu, device),
      bank_strong_(static_cast<int64_t>(data.unlabelled.size()), clusters, config.mu, device),
      step_(config) {}

std::vector<int64_t> GcdMcdl::fit(const Tensor& features) {
  const std::vector<int64_t> all = classifier_.fit(features);
  const auto first_unlabelled = all.end() - static_cast<std::ptrdiff_t>(truth_.size());
  return std::vector<int64_t>(first_unlabelled, all.end());
}

McdlTerms GcdMcdl::step(VisionTransformer& backbone, const Tensor& weak_features, const Tensor& head_outputs,
                        const Tensor& weak1, const Tensor& strong, const BatchLabels& labels, int64_t epoch,
                        int64_t iteration, bool losses) {
  Tensor weak_logits;
  {
    NoGradGuard no_grad;  // the banks read the weak views' predictions detached (mcdl-spec §2)
    weak_logits = classifier_.logits(weak_features.detach());
  }
  const auto logits = [&](const Tensor& images) { return classifier_.logits(backbone.forward(images)); };
  const McdlBatch batch{weak_logits,     head_outputs,     weak1, strong, labels.labels,
                        labels.labelled, labels.bank_index, epoch, iteration};
  return step_.run(logits, batch, bank_weak_, bank_strong_, losses);
}

std::string GcdMcdl::append_buckets(MetricsRow& row, const std::vector<int64_t>& clusters) const {
  const KnownLabels known = known_labels(truth_, clusters, is_old_);
  const std::vector<int64_t> cluster_to_class =
      known.truth.empty() ? std::vector<int64_t>{} : v2_assignment(known.truth, known.predictions);
  return append_bucket_columns(row, bucket_report(bank_weak_, bank_strong_, config_.mu, truth_, cluster_to_class));
}

void GcdMcdl::save(std::map<std::string, Tensor>& tensors) const {
  for (auto& [name, t] : prefixed("bank_weak.", bank_weak_.state())) tensors[name] = t;
  for (auto& [name, t] : prefixed("bank_strong.", bank_strong_.state())) tensors[name] = t;
  for (auto& [name, t] : prefixed("classifier.", classifier_.state())) tensors[name] = t;
}

void GcdMcdl::load(const std::map<std::string, Tensor>& tensors) {
  bank_weak_.load_state(unprefixed("bank_weak.", tensors));
  bank_strong_.load_state(unprefixed("bank_strong.", tensors));
  classifier_.load_state(unprefixed("classifier.", tensors));
}

}  // namespace mcdl
