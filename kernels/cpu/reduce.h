// Reductions on raw host buffers. The input is viewed as [outer, len, inner] with the
// reduced axis in the middle (outer: product of the dims before it, inner: after it); a
// reduction over all elements is outer = inner = 1. Sums run in double and in a fixed order
// per output, so results do not depend on the thread count. Callers ensure len >= 1. Every
// reduction runs in one pass: no scratch (the CUDA twins' scratch pointers are unused here).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {

inline int64_t reduce_scratch_words(int64_t, int64_t, int64_t) { return 0; }

// out[o, i] = (Σ_k x[o, k, i]) / divisor  (divisor 1 for a sum, len for a mean).
template <class T>
void sum_axis(const T* x, T* out, int64_t outer, int64_t len, int64_t inner, double divisor, double* /*scratch*/) {
  if (outer * inner == 1) {  // one long sum: split into fixed chunks (deterministic_sum)
    out[0] = static_cast<T>(deterministic_sum(len, [&](int64_t k) { return static_cast<double>(x[k]); }) / divisor);
    return;
  }
  // Each task sums a tile of contiguous inner positions of one outer slice, k in order.
  constexpr int64_t tile = 256;
  const int64_t tiles = (inner + tile - 1) / tile;
  parallel_rows(outer * tiles, len * std::min(inner, tile), [&](int64_t task) {
    const int64_t o = task / tiles, begin = (task % tiles) * tile, width = std::min(inner - begin, tile);
    const T* p = x + o * len * inner + begin;
    double acc[tile] = {};
    for (int64_t k = 0; k < len; ++k)
      for (int64_t i = 0; i < width; ++i) acc[i] += p[k * inner + i];
    for (int64_t i = 0; i < width; ++i) out[o * inner + begin + i] = static_cast<T>(acc[i] / divisor);
  });
}

// dx[o, k, i] (=|+=) g[o, i] / divisor, every element of dx.
template <class T>
void sum_axis_backward(const T* g, T* dx, int64_t outer, int64_t len, int64_t inner, double divisor,
                       bool overwrite) {
  const int64_t n = outer * len * inner;
  auto value = [&](int64_t j) { return static_cast<T>(g[(j / (len * inner)) * inner + j % inner] / divisor); };
  if (overwrite) {
    parallel_for(n, [&](int64_t j) { dx[j] = value(j); });
  } else {
    parallel_for(n, [&](int64_t j) { dx[j] += value(j); });
  }
}

namespace detail {
// PyTorch's max/argmax order: NaN beats every number; a tie does not beat, so the first
// maximal position wins.
template <class T>
bool beats(T candidate, T best) {
  return candidate > best || (std::isnan(candidate) && !std::isnan(best));
}

// The first k in [begin, end) that maximises p[k * stride].
template <class T>
int64_t first_max(const T* p, int64_t stride, int64_t begin, int64_t end) {
  int64_t best = begin;
  for (int64_t k = begin + 1; k < end; ++k)
    if (beats(p[k * stride], p[best * stride])) best = k;
  return best;
}
}  // namespace detail

// index[o, i] = the first k maximising x[o, k, i]; values[o, i] = that maximum (values may
// be null when only the index is wanted).
template <class T>
void max_axis(const T* x, T* values, int64_t* index, int64_t outer, int64_t len, int64_t inner,
              int64_t* /*scratch*/) {
  if (outer * inner == 1) {  // one long scan: first maxima of fixed chunks, combined in order
    constexpr int64_t chunk = 4096;
    const int64_t chunks = (len + chunk - 1) / chunk;
    std::vector<int64_t> best(static_cast<size_t>(chunks));
    parallel_rows(chunks, chunk, [&](int64_t c) {
      best[static_cast<size_t>(c)] = detail::first_max(x, 1, c * chunk, std::min(len, (c + 1) * chunk));
    });
    int64_t k = best[0];
    for (int64_t candidate : best)
      if (detail::beats(x[candidate], x[k])) k = candidate;
    index[0] = k;
    if (values) values[0] = x[k];
    return;
  }
  parallel_rows(outer * inner, len, [&](int64_t j) {
    const T* p = x + (j / inner) * len * inner + j % inner;
    const int64_t k = detail::first_max(p, inner, 0, len);
    index[j] = k;
    if (values) values[j] = p[k * inner];
  });
}

// dx[o, k, i] (=|+=) g[o, i] where k == index[o, i], else 0.
template <class T>
void max_axis_backward(const T* g, const int64_t* index, T* dx, int64_t outer, int64_t len, int64_t inner,
                       bool overwrite) {
  if (overwrite) parallel_for(outer * len * inner, [&](int64_t j) { dx[j] = T(0); });
  parallel_for(outer * inner, [&](int64_t j) { dx[((j / inner) * len + index[j]) * inner + j % inner] += g[j]; });
}

// k-means' assignment step from the products p = x·cᵀ (f32 [n, m]) and the squared norms
// ‖x_i‖² (f64 [n]) and ‖c_c‖² (f64 [m]): nearest[i] = the first c minimising the squared
// distance max(0, ‖x_i‖² − 2·p[i, c] + ‖c_c‖²), computed in double in that order.
inline void nearest_from_products(const float* products, const double* point_norms, const double* centre_norms,
                                  int64_t n, int64_t m, int64_t* nearest) {
  parallel_rows(n, m, [&](int64_t i) {
    const float* p = products + i * m;
    int64_t best = 0;
    double best_distance = 0.0;
    for (int64_t c = 0; c < m; ++c) {
      const double distance = std::max(0.0, point_norms[i] - 2.0 * p[c] + centre_norms[c]);
      if (c == 0 || distance < best_distance) best = c, best_distance = distance;
    }
    nearest[i] = best;
  });
}

}  // namespace mcdl::cpu
