// A class-balanced high bucket (an MCDL variant, --mcdl-class-cap; docs/method.md §7): no
// pseudo-label may hold more than its share of the high bucket. SimGCD's classifier favours the
// known classes, and the high bucket inherits that: on Fashion-MNIST 62% of it carried a known
// class's pseudo-label. With a cap c, a cluster keeps at most ⌊c · N / K⌋ high samples (N
// unlabelled images, K clusters: c times the share of a uniform prior); its other high samples,
// the least confident ones, count as medium (MixMatch's soft targets instead of L_sup's hard
// label).
//
// The cap is drawn once per epoch, at its start, over every unlabelled image's banks; the steps of
// the epoch then demote the samples it marked. A sample that turns high during the epoch is not
// capped until the next one.
#pragma once
#include <cstdint>
#include <vector>

#include "mcdl/method/memory_bank.h"

namespace mcdl {

// ⌊cap · num_samples / num_clusters⌋, at least 1.
int64_t class_cap_quota(double cap, int64_t num_samples, int64_t num_clusters);

// The high samples to demote: for each pseudo-label held by more than `quota` of the high
// samples, all but its `quota` most confident ones (confidence: the weak bank's mean probability
// of that pseudo-label; ties keep the lower slot). high_slots, pseudo_labels and confidence are
// parallel; the result is a mask over slots 0..num_samples-1 (1: demoted).
std::vector<uint8_t> class_cap_demotions(const std::vector<int64_t>& high_slots,
                                         const std::vector<int64_t>& pseudo_labels,
                                         const std::vector<float>& confidence, int64_t num_samples, int64_t quota);

// The same from the banks: the high bucket over every sample, its weak-bank modes and their mean
// probabilities.
std::vector<uint8_t> class_cap_demotions(const MemoryBank& bank_weak, const MemoryBank& bank_strong, int64_t mu,
                                         double cap);

}  // namespace mcdl
