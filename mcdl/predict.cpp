#include "mcdl/predict.h"

#include "engine/autograd.h"
#include "engine/ops.h"

namespace mcdl {

std::vector<ImagePrediction> predict_images(SimGCDModel& model, const std::vector<std::string>& paths,
                                            const FeatureOptions& options, double temperature) {
  FeatureOptions raw = options;
  raw.normalise = false;  // the head takes the backbone's CLS feature as it is
  const Tensor features = extract_features(model.backbone, paths, raw);
  NoGradGuard no_grad;
  const Tensor logits = model.head.forward(features.to(model.backbone.cls_token.device())).logits;
  const Tensor probabilities = softmax(logits / temperature).to(Device::cpu()).to(DType::f64);
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

}  // namespace mcdl
