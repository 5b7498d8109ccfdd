// MCDL's memory banks, credibility buckets and one-hot targets on raw host buffers (the CPU
// references of kernels/cuda/memory_bank.h; the engine ops of engine/ops/method.h and one_hot
// call them).
//
// A bank holds, per sample s, a ring of `mu` entries: ring_classes[s, mu] (the argmax class of
// each entry), ring_probs[s, mu, classes] (its probability vector), position[s] (the slot the
// next entry goes to) and filled[s] (how many entries it holds, at most mu). A ring fills from
// slot 0, so while it is not full its entries are slots [0, filled) and position == filled.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {

// The first maximal element of a row, a NaN counting as the largest (torch.argmax).
inline int64_t first_argmax(const float* row, int64_t n) {
  int64_t best = 0;
  for (int64_t c = 1; c < n; ++c) {
    const float v = row[c], b = row[best];
    if (b != b) break;  // a NaN is never beaten
    if (v > b || v != v) best = c;
  }
  return best;
}

// Scratch int64s bank_update needs per written row: none (the rows are written one by one).
inline constexpr int64_t bank_update_scratch_per_row = 0;

// Writes the n rows of probs [n, classes] into the rings of samples[i], one after the other
// in batch order: a sample named twice gets two entries, the later one the more recent.
inline void bank_update(const int64_t* samples, const float* probs, int64_t n, int64_t classes, int64_t mu,
                        int32_t* ring_classes, float* ring_probs, int64_t* position, int64_t* filled,
                        int64_t* /*scratch*/) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = samples[i], slot = position[s];
    const float* row = probs + i * classes;
    std::copy(row, row + classes, ring_probs + (s * mu + slot) * classes);
    ring_classes[s * mu + slot] = static_cast<int32_t>(first_argmax(row, classes));
    position[s] = (slot + 1) % mu;
    filled[s] = std::min(filled[s] + 1, mu);
  }
}

// The most frequent class of one ring and how often it occurs among the filled entries; ties
// go to the class whose latest entry is the most recent. An empty ring gives mode −1, count 0.
// Entries are visited from the most recent back: a class is first met at its latest entry, so
// keeping the first class that reaches a strictly larger count breaks ties by recency.
inline void ring_mode(const int32_t* classes, int64_t mu, int64_t position, int64_t filled, int64_t* mode,
                      int64_t* count) {
  int64_t best_class = -1, best_count = 0;
  for (int64_t t = 0; t < filled; ++t) {
    const int32_t c = classes[(position - 1 - t + mu) % mu];
    int64_t occurrences = 0;
    for (int64_t u = 0; u < filled; ++u) occurrences += classes[(position - 1 - u + mu) % mu] == c;
    if (occurrences > best_count) best_class = c, best_count = occurrences;
  }
  *mode = best_class;
  *count = best_count;
}

inline void bank_consistency(const int64_t* samples, int64_t n, int64_t mu, const int32_t* ring_classes,
                             const int64_t* position, const int64_t* filled, int64_t* mode, int64_t* count) {
  parallel_rows(n, mu * mu, [&](int64_t i) {
    const int64_t s = samples[i];
    ring_mode(ring_classes + s * mu, mu, position[s], filled[s], mode + i, count + i);
  });
}

// out[i, :] = the mean of the filled entries of sample samples[i] (added in slot order, in
// double), or zeros for an empty ring.
inline void bank_mean_probs(const int64_t* samples, int64_t n, int64_t classes, int64_t mu, const float* ring_probs,
                            const int64_t* filled, float* out) {
  parallel_rows(n, classes * mu, [&](int64_t i) {
    const int64_t s = samples[i], held = filled[s];
    for (int64_t c = 0; c < classes; ++c) {
      double sum = 0;
      for (int64_t slot = 0; slot < held; ++slot) sum += ring_probs[(s * mu + slot) * classes + c];
      out[i * classes + c] = held > 0 ? static_cast<float>(sum / static_cast<double>(held)) : 0.0f;
    }
  });
}

// MCDL's credibility bucket of one sample (docs/method.md §3): 2 = high when count_w > 3μ/4,
// count_s > μ/4 and mode_w == mode_s; 1 = medium when only the modes differ; 0 = low. The
// thresholds compare 4·count with 3μ and μ, exact for any μ.
inline uint8_t credibility_bucket(int64_t mode_w, int64_t count_w, int64_t mode_s, int64_t count_s, int64_t mu) {
  if (!(4 * count_w > 3 * mu && 4 * count_s > mu)) return 0;
  return mode_w == mode_s ? 2 : 1;
}

inline void credibility_buckets(const int64_t* mode_w, const int64_t* count_w, const int64_t* mode_s,
                                const int64_t* count_s, int64_t n, int64_t mu, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = credibility_bucket(mode_w[i], count_w[i], mode_s[i], count_s[i], mu);
}

// out[i, c] = 1 where classes[i] == c, else 0 (classes already checked to lie in [0, num_classes)).
template <class T>
void one_hot(const int64_t* classes, int64_t n, int64_t num_classes, T* out) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < num_classes; ++c) out[i * num_classes + c] = classes[i] == c ? T(1) : T(0);
}

}  // namespace mcdl::cpu
