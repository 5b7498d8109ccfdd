#include "mcdl/method/kmeans_classifier.h"

#include <utility>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/ops.h"

namespace mcdl {

KMeansClassifier::KMeansClassifier(std::vector<int64_t> labelled_rows, std::vector<int64_t> labelled_classes,
                                   KMeansOptions first_fit, Device device)
    : labelled_rows_(std::move(labelled_rows)),
      labelled_classes_(std::move(labelled_classes)),
      first_fit_(first_fit),
      device_(device) {
  check(first_fit_.k >= 1, "KMeansClassifier: k = ", first_fit_.k, " must be at least 1");
}

std::vector<int64_t> KMeansClassifier::fit(const Tensor& features) {
  check(features.defined() && features.dim() == 2, "KMeansClassifier::fit: features must be [N, D], got ",
        features.defined() ? features.str() : std::string("undefined"));
  check(!fitted() || features.size(1) == dim_, "KMeansClassifier::fit: features ", features.str(),
        " do not match the centres' width ", dim_);
  NoGradGuard no_grad;
  KMeansOptions options = first_fit_;
  if (fitted()) options.restarts = 1;  // warm: no draw, so one restart is all there is
  KMeansResult result = semi_supervised_kmeans(features, labelled_rows_, labelled_classes_, options,
                                               fitted() ? centres_ : Tensor());
  set_centres(result.centres.to(Device::cpu()));
  return std::move(result.assignment);
}

Tensor KMeansClassifier::logits(const Tensor& features) const {
  check(fitted(), "KMeansClassifier::logits: no centres yet (fit or load_state first)");
  check(features.defined() && features.dim() == 2 && features.size(1) == dim_,
        "KMeansClassifier::logits: features must be [n, ", dim_, "], got ",
        features.defined() ? features.str() : std::string("undefined"));
  const Tensor centres = features.dtype() == unit_centres_.dtype() ? unit_centres_ : unit_centres_.to(features.dtype());
  return linear(l2_normalize(features), centres);
}

std::map<std::string, Tensor> KMeansClassifier::state() const {
  check(fitted(), "KMeansClassifier::state: no centres yet");
  return {{"centres", centres_}};
}

void KMeansClassifier::load_state(const std::map<std::string, Tensor>& state) {
  const auto it = state.find("centres");
  check(state.size() == 1 && it != state.end(), "KMeansClassifier: the state must hold exactly 'centres', got ",
        state.size(), " tensors");
  const Tensor& c = it->second;
  check(c.dim() == 2 && c.size(0) == first_fit_.k && c.dtype() == DType::f32 && (dim_ < 0 || c.size(1) == dim_),
        "KMeansClassifier: centres ", c.str(), " must be f32 [K = ", first_fit_.k, ", D]");
  set_centres(c.to(Device::cpu()).clone());
}

void KMeansClassifier::set_centres(const Tensor& centres) {
  centres_ = centres;
  dim_ = centres.size(1);
  NoGradGuard no_grad;
  unit_centres_ = l2_normalize(centres_.to(device_));
}

}  // namespace mcdl
