#include "mcdl/evaluation/predict.h"

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/ops.h"
#include "mcdl/evaluation/kmeans.h"

namespace mcdl {
namespace {

// Softmax rows of scores / temperature, as f64 on the host.
Tensor host_softmax(const Tensor& scores, double temperature) {
  return softmax(scores / temperature).to(Device::cpu()).to(DType::f64);
}

}  // namespace

std::vector<ImagePrediction> predict_images(SimGCDModel& model, const std::vector<std::string>& paths,
                                            const FeatureOptions& options, double temperature) {
  FeatureOptions raw = options;
  raw.normalise = false;  // the head takes the backbone's CLS feature as it is
  const Tensor features = extract_features(model.backbone, paths, raw);
  NoGradGuard no_grad;
  const Tensor logits = model.head.forward(features.to(model.backbone.cls_token.device())).logits;
  const Tensor probabilities = host_softmax(logits, temperature);
  const int64_t n = probabilities.size(0), k = probabilities.size(1);
  const double* p = probabilities.data<double>();
  std::vector<ImagePrediction> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ImagePrediction& best = out[static_cast<size_t>(i)];
    for (int64_t c = 0; c < k; ++c)
      if (p[i * k + c] > best.probability) best = {c, p[i * k + c]};
  }
  return out;
}

std::vector<ImagePrediction> predict_images_by_centres(VisionTransformer& backbone, const Tensor& centres,
                                                       const std::vector<std::string>& paths,
                                                       const FeatureOptions& options, double temperature) {
  check(centres.dim() == 2 && centres.size(1) == backbone.config().embed_dim, "predict_images_by_centres: centres ",
        centres.str(), " do not match the backbone's ", backbone.config().embed_dim, "-wide features");
  FeatureOptions normalised = options;
  normalised.normalise = true;  // GCD clusters L2-normalised features
  const Tensor features = extract_features(backbone, paths, normalised);
  const Tensor host_centres = centres.to(Device::cpu()).to(DType::f32);
  const std::vector<int64_t> nearest = nearest_centres(features, host_centres);
  NoGradGuard no_grad;
  const Tensor probabilities = host_softmax(linear(features, l2_normalize(host_centres)), temperature);  // x·ĉᵀ
  const int64_t k = probabilities.size(1);
  const double* p = probabilities.data<double>();
  std::vector<ImagePrediction> out(nearest.size());
  for (size_t i = 0; i < nearest.size(); ++i) out[i] = {nearest[i], p[static_cast<int64_t>(i) * k + nearest[i]]};
  return out;
}

}  // namespace mcdl
