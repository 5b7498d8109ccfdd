// SimGCD's sampler (reference: WeightedRandomSampler over the merged training set, labelled
// samples first, then unlabelled): each epoch draws N = n_l + n_u samples with replacement,
// weight 1 per labelled sample and n_l / n_u per unlabelled sample, so about half of every
// batch is labelled. Batches are consecutive runs of `batch_size` draws; the incomplete last
// batch is dropped (drop_last).
//
// The draws of epoch e come from the generator stream ("sampler", e) of the run's seed alone,
// so they do not depend on worker threads or on what ran before (a resumed run draws the same).
#pragma once
#include <cstdint>
#include <vector>

namespace mcdl {

// One drawn sample: a position in the merged set (< n_l: labelled), split into its part.
struct SampledItem {
  bool labelled = false;
  int64_t index = 0;  // position within the labelled or within the unlabelled set
};

class GcdSampler {
 public:
  GcdSampler(int64_t num_labelled, int64_t num_unlabelled, int64_t batch_size, uint64_t seed);
  int64_t batches_per_epoch() const;  // ⌊(n_l + n_u) / batch_size⌋
  int64_t batch_size() const { return batch_size_; }
  // Every draw of the epoch, in order (the full N, before drop_last).
  std::vector<SampledItem> draw_epoch(int64_t epoch) const;

 private:
  int64_t num_labelled_, num_unlabelled_, batch_size_;
  uint64_t seed_;
};

}  // namespace mcdl
