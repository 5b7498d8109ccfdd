#include "kernels/cuda/memory_bank.h"

#include "kernels/cuda/elementwise_launch.h"

namespace mcdl::cuda {
namespace {

// The first maximal element of a row, a NaN counting as the largest (as cpu::first_argmax).
__device__ int64_t first_argmax(const float* row, int64_t n) {
  int64_t best = 0;
  for (int64_t c = 1; c < n; ++c) {
    const float v = row[c], b = row[best];
    if (b != b) break;
    if (v > b || v != v) best = c;
  }
  return best;
}

// One thread per row: where it goes (scratch slot[i], or −1 when a later row of the same
// sample overwrites that slot within this batch), how far the first row of each sample moves
// its ring (advance[i], 0 for the later rows), and the row's argmax class. Only reads position.
__global__ void bank_plan_kernel(const int64_t* samples, const float* probs, int64_t n, int64_t classes, int64_t mu,
                                 const int64_t* position, int64_t* slot, int64_t* advance, int64_t* row_class) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const int64_t s = samples[i];
    int64_t before = 0, total = 0;
    for (int64_t j = 0; j < n; ++j) {
      const bool same = samples[j] == s;
      total += same;
      before += same && j < i;
    }
    slot[i] = total - before <= mu ? (position[s] + before) % mu : -1;
    advance[i] = before == 0 ? total : 0;
    row_class[i] = first_argmax(probs + i * classes, classes);
  }
}

// One thread per element of probs: copies it into its slot (distinct slots, so no races); the
// first element of each sample's first row also moves that sample's position and count.
__global__ void bank_write_kernel(const int64_t* samples, const float* probs, int64_t n, int64_t classes, int64_t mu,
                                  const int64_t* slot, const int64_t* advance, const int64_t* row_class,
                                  int32_t* ring_classes, float* ring_probs, int64_t* position, int64_t* filled) {
  for (int64_t e = grid_index(); e < n * classes; e += grid_stride()) {
    const int64_t i = e / classes, c = e % classes, s = samples[i];
    if (slot[i] >= 0) {
      ring_probs[(s * mu + slot[i]) * classes + c] = probs[e];
      if (c == 0) ring_classes[s * mu + slot[i]] = static_cast<int32_t>(row_class[i]);
    }
    if (c == 0 && advance[i] > 0) {
      position[s] = (position[s] + advance[i]) % mu;
      filled[s] = filled[s] + advance[i] < mu ? filled[s] + advance[i] : mu;
    }
  }
}

// As cpu::ring_mode: entries from the most recent back, the first class to reach a strictly
// larger count wins, so ties go to the most recent latest entry.
__global__ void bank_consistency_kernel(const int64_t* samples, int64_t n, int64_t mu, const int32_t* ring_classes,
                                        const int64_t* position, const int64_t* filled, int64_t* mode,
                                        int64_t* count) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const int64_t s = samples[i], pos = position[s], held = filled[s];
    const int32_t* ring = ring_classes + s * mu;
    int64_t best_class = -1, best_count = 0;
    for (int64_t t = 0; t < held; ++t) {
      const int32_t c = ring[(pos - 1 - t + mu) % mu];
      int64_t occurrences = 0;
      for (int64_t u = 0; u < held; ++u) occurrences += ring[(pos - 1 - u + mu) % mu] == c;
      if (occurrences > best_count) best_class = c, best_count = occurrences;
    }
    mode[i] = best_class;
    count[i] = best_count;
  }
}

// One thread per output element: the filled slots in slot order, in double (as the CPU).
__global__ void bank_mean_probs_kernel(const int64_t* samples, int64_t n, int64_t classes, int64_t mu,
                                       const float* ring_probs, const int64_t* filled, float* out) {
  for (int64_t e = grid_index(); e < n * classes; e += grid_stride()) {
    const int64_t i = e / classes, c = e % classes, s = samples[i], held = filled[s];
    double sum = 0;
    for (int64_t slot = 0; slot < held; ++slot) sum += ring_probs[(s * mu + slot) * classes + c];
    out[e] = held > 0 ? static_cast<float>(sum / static_cast<double>(held)) : 0.0f;
  }
}

__global__ void credibility_buckets_kernel(const int64_t* mode_w, const int64_t* count_w, const int64_t* mode_s,
                                           const int64_t* count_s, int64_t n, int64_t mu, uint8_t* out) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const bool consistent = 4 * count_w[i] > 3 * mu && 4 * count_s[i] > mu;
    out[i] = !consistent ? uint8_t{0} : mode_w[i] == mode_s[i] ? uint8_t{2} : uint8_t{1};
  }
}

template <class T>
__global__ void one_hot_kernel(const int64_t* classes, int64_t n, int64_t num_classes, T* out) {
  for (int64_t e = grid_index(); e < n * num_classes; e += grid_stride())
    out[e] = classes[e / num_classes] == e % num_classes ? T(1) : T(0);
}

}  // namespace

void bank_update(const int64_t* samples, const float* probs, int64_t n, int64_t classes, int64_t mu,
                 int32_t* ring_classes, float* ring_probs, int64_t* position, int64_t* filled, int64_t* scratch) {
  if (n == 0) return;
  int64_t *slot = scratch, *advance = scratch + n, *row_class = scratch + 2 * n;
  launch(bank_plan_kernel, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), samples, probs, n,
         classes, mu, position, slot, advance, row_class);
  launch(bank_write_kernel, elementwise_grid(n * classes), dim3(elementwise_block()), 0, engine_stream(), samples,
         probs, n, classes, mu, slot, advance, row_class, ring_classes, ring_probs, position, filled);
}

void bank_consistency(const int64_t* samples, int64_t n, int64_t mu, const int32_t* ring_classes,
                      const int64_t* position, const int64_t* filled, int64_t* mode, int64_t* count) {
  if (n > 0)
    launch(bank_consistency_kernel, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), samples, n,
           mu, ring_classes, position, filled, mode, count);
}

void bank_mean_probs(const int64_t* samples, int64_t n, int64_t classes, int64_t mu, const float* ring_probs,
                     const int64_t* filled, float* out) {
  if (n * classes > 0)
    launch(bank_mean_probs_kernel, elementwise_grid(n * classes), dim3(elementwise_block()), 0, engine_stream(),
           samples, n, classes, mu, ring_probs, filled, out);
}

void credibility_buckets(const int64_t* mode_w, const int64_t* count_w, const int64_t* mode_s, const int64_t* count_s,
                         int64_t n, int64_t mu, uint8_t* out) {
  if (n > 0)
    launch(credibility_buckets_kernel, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), mode_w,
           count_w, mode_s, count_s, n, mu, out);
}

template <class T>
void one_hot(const int64_t* classes, int64_t n, int64_t num_classes, T* out) {
  if (n * num_classes > 0)
    launch(one_hot_kernel<T>, elementwise_grid(n * num_classes), dim3(elementwise_block()), 0, engine_stream(),
           classes, n, num_classes, out);
}

template void one_hot<float>(const int64_t*, int64_t, int64_t, float*);
template void one_hot<double>(const int64_t*, int64_t, int64_t, double*);

}  // namespace mcdl::cuda
