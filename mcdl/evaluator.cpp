#include "mcdl/evaluator.h"

#include "data/loader.h"
#include "engine/autograd.h"
#include "engine/ops.h"

namespace mcdl {

EvaluationSet::EvaluationSet(const ImageCache& cache, std::vector<int64_t> train_indices, EvaluationOptions options)
    : cache_(cache), train_indices_(std::move(train_indices)), options_(std::move(options)) {}

std::vector<std::vector<int64_t>> EvaluationSet::batches() const {
  std::vector<std::vector<int64_t>> out;
  for (size_t start = 0; start < train_indices_.size(); start += static_cast<size_t>(options_.batch_size)) {
    const size_t end = std::min(train_indices_.size(), start + static_cast<size_t>(options_.batch_size));
    out.emplace_back(train_indices_.begin() + static_cast<std::ptrdiff_t>(start),
                     train_indices_.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

template <class Visit>
void EvaluationSet::for_each_frozen_batch(VisionTransformer& backbone, Visit visit) {
  NoGradGuard no_grad;
  if (!frozen_tokens_.empty()) {
    for (size_t b = 0; b < frozen_tokens_.size(); ++b) visit(b, frozen_tokens_[b].to(options_.device));
    return;
  }
  // Cache the tokens when they fit: N · (1 + patches) · D floats.
  const VitConfig& vit = backbone.config();
  const int64_t grid = options_.image_size / vit.patch_size;
  const int64_t bytes = size() * (1 + grid * grid) * vit.embed_dim * 4;
  const bool keep = !cache_decided_ && bytes <= options_.memory_budget_bytes && backbone.frozen_depth() > 0;
  cache_decided_ = true;
  LoaderOptions loader_options;
  loader_options.image_size = options_.image_size;
  loader_options.normalization = options_.normalization;
  loader_options.views = {ViewKind::test};
  loader_options.workers = options_.workers;
  loader_options.device = options_.device;
  BatchLoader loader(cache_, loader_options);
  loader.start(0, batches());
  LoadedBatch batch;
  std::vector<Tensor> kept;
  while (loader.next(batch)) {
    Tensor tokens = backbone.forward_frozen(batch.views[0]);
    if (keep) kept.push_back(tokens.to(Device::cpu()));
    visit(static_cast<size_t>(batch.batch), tokens);
  }
  frozen_tokens_ = std::move(kept);
}

std::vector<int64_t> EvaluationSet::predict(SimGCDModel& model) {
  std::vector<int64_t> predictions;
  predictions.reserve(train_indices_.size());
  for_each_frozen_batch(model.backbone, [&](size_t, const Tensor& tokens) {
    const HeadOutput out = model.head.forward(model.backbone.forward_from_frozen(tokens));
    const std::vector<int64_t> batch = argmax(out.logits, 1).to(Device::cpu()).to_vector<int64_t>();
    predictions.insert(predictions.end(), batch.begin(), batch.end());
  });
  return predictions;
}

Tensor EvaluationSet::features(VisionTransformer& backbone, bool normalise) {
  std::vector<Tensor> parts;
  for_each_frozen_batch(backbone, [&](size_t, const Tensor& tokens) {
    Tensor cls = backbone.forward_from_frozen(tokens);
    parts.push_back((normalise ? l2_normalize(cls) : cls).to(Device::cpu()));
  });
  return concat(parts, 0);
}

}  // namespace mcdl
