#include "data/sampler.h"

#include "engine/error.h"
#include "engine/random.h"

namespace mcdl {

GcdSampler::GcdSampler(int64_t num_labelled, int64_t num_unlabelled, int64_t batch_size, uint64_t seed)
    : num_labelled_(num_labelled), num_unlabelled_(num_unlabelled), batch_size_(batch_size), seed_(seed) {
  check(num_labelled > 0, "sampler: the labelled set is empty (every old class needs labelled images)");
  check(num_unlabelled > 0, "sampler: the unlabelled set is empty");
  check(batch_size > 0, "sampler: batch size must be positive, got ", batch_size);
  check(batches_per_epoch() > 0, "sampler: batch size ", batch_size, " is larger than the training set (",
        num_labelled + num_unlabelled, " images); use a smaller --batch-size");
}

int64_t GcdSampler::batches_per_epoch() const { return (num_labelled_ + num_unlabelled_) / batch_size_; }

std::vector<SampledItem> GcdSampler::draw_epoch(int64_t epoch) const {
  std::vector<double> weights(static_cast<size_t>(num_labelled_ + num_unlabelled_), 1.0);
  const double unlabelled_weight = static_cast<double>(num_labelled_) / static_cast<double>(num_unlabelled_);
  for (int64_t i = num_labelled_; i < num_labelled_ + num_unlabelled_; ++i)
    weights[static_cast<size_t>(i)] = unlabelled_weight;
  RandomStream stream(seed_, stream_id("sampler", {epoch}));
  const std::vector<int64_t> merged = stream.weighted_sample(weights, num_labelled_ + num_unlabelled_);
  std::vector<SampledItem> items;
  items.reserve(merged.size());
  for (int64_t m : merged)
    items.push_back(m < num_labelled_ ? SampledItem{true, m} : SampledItem{false, m - num_labelled_});
  return items;
}

}  // namespace mcdl
