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

// k-means' exact distances: d2[i] = Σ_d (x[i, d] − c[labels[i], d])² over d in order, in double,
// each step rounded (f32 points [n, dim], f64 centres [k, dim]). Four points at a time: their four
// chains of dependent additions overlap (one chain alone waits on each addition), and each value
// has the bits of its point alone.
inline void assigned_squared_distances(const float* points, const int64_t* labels, const double* centres, int64_t n,
                                       int64_t dim, double* d2) {
  auto one = [&](int64_t i) {
    const float* x = points + i * dim;
    const double* c = centres + labels[i] * dim;
    double s = 0.0;
    for (int64_t d = 0; d < dim; ++d) {
      const double e = static_cast<double>(x[d]) - c[d];
      s += e * e;
    }
    d2[i] = s;
  };
  parallel_rows((n + 3) / 4, 4 * dim, [&](int64_t group) {
    const int64_t i = 4 * group;
    if (i + 4 > n) {
      for (int64_t j = i; j < n; ++j) one(j);
      return;
    }
    const float *x0 = points + i * dim, *x1 = x0 + dim, *x2 = x1 + dim, *x3 = x2 + dim;
    const double *c0 = centres + labels[i] * dim, *c1 = centres + labels[i + 1] * dim,
                 *c2 = centres + labels[i + 2] * dim, *c3 = centres + labels[i + 3] * dim;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (int64_t d = 0; d < dim; ++d) {
      const double e0 = static_cast<double>(x0[d]) - c0[d], e1 = static_cast<double>(x1[d]) - c1[d];
      const double e2 = static_cast<double>(x2[d]) - c2[d], e3 = static_cast<double>(x3[d]) - c3[d];
      s0 += e0 * e0, s1 += e1 * e1, s2 += e2 * e2, s3 += e3 * e3;
    }
    d2[i] = s0, d2[i + 1] = s1, d2[i + 2] = s2, d2[i + 3] = s3;
  });
}

// k-means' centre sums over the columns [first, last) of f32 points [n, dim]: sums[c, d − first]
// = Σ x[j, d] in double over the members j of cluster c in the order listed, members[offsets[c]
// .. offsets[c + 1]) (k clusters). Clusters are split over the threads, so each sum's order holds
// for any thread count.
inline void cluster_sums(const float* points, const int64_t* members, const int64_t* offsets, int64_t k, int64_t dim,
                         int64_t first, int64_t last, double* sums) {
  const int64_t width = last - first;
  parallel_rows(k, (offsets[k] / std::max<int64_t>(k, 1) + 1) * width, [&](int64_t c) {
    double* sum = sums + c * width;
    for (int64_t d = 0; d < width; ++d) sum[d] = 0.0;
    for (int64_t j = offsets[c]; j < offsets[c + 1]; ++j) {
      const float* x = points + members[j] * dim + first;
      for (int64_t d = 0; d < width; ++d) sum[d] += x[d];
    }
  });
}

}  // namespace mcdl::cpu
