#include "mcdl/run/epoch_plan.h"

namespace mcdl {

EpochPlan plan_epoch(const TrainConfig& config, const TrainingData& data, int64_t epoch) {
  const GcdSampler sampler(static_cast<int64_t>(data.labelled.size()), static_cast<int64_t>(data.unlabelled.size()),
                           config.batch_size, config.seed);
  EpochPlan plan;
  plan.draws = sampler.draw_epoch(epoch);
  const int64_t b = config.batch_size;
  plan.batches.resize(static_cast<size_t>(sampler.batches_per_epoch()));
  for (int64_t i = 0; i < sampler.batches_per_epoch() * b; ++i) {
    const SampledItem& item = plan.draws[static_cast<size_t>(i)];
    plan.batches[static_cast<size_t>(i / b)].push_back(item.labelled ? data.labelled[static_cast<size_t>(item.index)]
                                                                     : data.unlabelled[static_cast<size_t>(item.index)]);
  }
  return plan;
}

BatchLabels batch_labels(const EpochPlan& plan, const TrainingData& data, int64_t batch) {
  const std::vector<int64_t>& images = plan.batches[static_cast<size_t>(batch)];
  const size_t b = images.size();
  BatchLabels out{std::vector<int64_t>(b, -1), std::vector<uint8_t>(b, 0), std::vector<int64_t>(b, -1)};
  for (size_t i = 0; i < b; ++i) {
    const SampledItem& item = plan.draws[static_cast<size_t>(batch) * b + i];
    if (item.labelled) {
      out.labels[i] = data.label(images[i]);
      out.labelled[i] = 1;
    } else {
      out.bank_index[i] = item.index;
    }
  }
  return out;
}

}  // namespace mcdl
