// Before any definition: the AVX-512 path must not fuse a·b + c (the same bits as the SSE2 path,
// which has no FMA); its helpers are always inlined, so the by-value vector ABI never applies. clang
// (only `make fuzz` builds with it) takes the four-lane path on every processor, as in
// kernels/cpu/gelu_float.cpp.
#ifndef __clang__
#define MCDL_ROWS_SIXTEEN_LANES 1
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#include "kernels/cpu/row_float.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/exp_float.h"

namespace mcdl::cpu {
namespace {

constexpr int64_t group = 16;

// Sixteen floats as group / W vectors of W lanes: the same sixteen partial sums on either width.
template <class F>
struct Sixteen {
  static constexpr int width = sizeof(F) / sizeof(float), count = group / width;
  F v[count];

  [[gnu::always_inline]] static Sixteen load(const float* p) {
    Sixteen s;
    std::memcpy(s.v, p, sizeof s.v);
    return s;
  }
  [[gnu::always_inline]] static Sixteen fill(float x) {
    Sixteen s;
    for (F& lanes : s.v) lanes = F{} + x;
    return s;
  }
  [[gnu::always_inline]] void store(float* p) const { std::memcpy(p, v, sizeof v); }
};

// The pairwise total of the sixteen partials, in one order for both widths.
template <class F>
[[gnu::always_inline]] inline float total(const Sixteen<F>& partial) {
  float p[group];
  partial.store(p);
  for (int64_t half = group / 2; half >= 1; half /= 2)
    for (int64_t l = 0; l < half; ++l) p[l] += p[l + half];
  return p[0];
}

// Calls body on each group of sixteen of x[0, n): whole groups straight from memory, the last
// partial one from a copy padded with `pad`; body returns the group's result lanes, which are
// written to y[0, n) (y null: only body's side effects matter).
template <class F, class Body>
[[gnu::always_inline]] inline void for_groups(const float* x, float* y, int64_t n, float pad, Body&& body) {
  int64_t i = 0;
  for (; i + group <= n; i += group) {
    const Sixteen<F> out = body(Sixteen<F>::load(x + i));
    if (y) out.store(y + i);
  }
  if (i == n) return;
  float padded[group];
  std::fill(padded, padded + group, pad);
  std::copy(x + i, x + n, padded);
  const Sixteen<F> out = body(Sixteen<F>::load(padded));
  if (!y) return;
  out.store(padded);
  std::copy(padded, padded + (n - i), y + i);
}

template <class F, class I>
[[gnu::always_inline]] inline float softmax_numerators_lanes(float* row, int64_t n) {
  using S = Sixteen<F>;
  S top = S::fill(-INFINITY);
  for_groups<F>(row, nullptr, n, -INFINITY, [&](S s) {
    for (int k = 0; k < S::count; ++k) top.v[k] = detail::select(s.v[k] > top.v[k], s.v[k], top.v[k]);
    return s;
  });
  float most = -INFINITY;
  for (const F& lanes : top.v)
    for (int l = 0; l < S::width; ++l) most = std::max(most, lanes[l]);
  // The padding's exp(−inf) is 0 and leaves the sum as it is.
  S sum = S::fill(0.0f);
  for_groups<F>(row, row, n, -INFINITY, [&](S s) {
    for (int k = 0; k < S::count; ++k) {
      s.v[k] = exp_lanes<F, I>(s.v[k] - most);
      sum.v[k] += s.v[k];
    }
    return s;
  });
  return total(sum);
}

template <class F>
[[gnu::always_inline]] inline void layer_norm_row_lanes(const float* x, const float* gamma, const float* beta,
                                                        float* y, int64_t d, float eps) {
  using S = Sixteen<F>;
  S sum = S::fill(0.0f);
  for_groups<F>(x, nullptr, d, 0.0f, [&](S s) {
    for (int k = 0; k < S::count; ++k) sum.v[k] += s.v[k];
    return s;
  });
  const float mean = total(sum) / static_cast<float>(d);
  // Padded with the mean, whose centred square is 0.
  S squares = S::fill(0.0f);
  for_groups<F>(x, nullptr, d, mean, [&](S s) {
    for (int k = 0; k < S::count; ++k) {
      const F centred = s.v[k] - mean;
      squares.v[k] += centred * centred;
    }
    return s;
  });
  const float rstd = 1.0f / std::sqrt(total(squares) / static_cast<float>(d) + eps);
  // Element by element: the same operations on lanes and on the scalar tail.
  int64_t c = 0;
  for (; c + group <= d; c += group) {
    S out = S::load(x + c);
    const S g = S::load(gamma + c), b = S::load(beta + c);
    for (int k = 0; k < S::count; ++k) out.v[k] = (out.v[k] - mean) * rstd * g.v[k] + b.v[k];
    out.store(y + c);
  }
  for (; c < d; ++c) y[c] = (x[c] - mean) * rstd * gamma[c] + beta[c];
}

#ifdef MCDL_ROWS_SIXTEEN_LANES
__attribute__((target("avx512f"))) float softmax_numerators_avx512(float* row, int64_t n) {
  return softmax_numerators_lanes<f32x16, i32x16>(row, n);
}
__attribute__((target("avx512f"))) void layer_norm_row_avx512(const float* x, const float* gamma, const float* beta,
                                                             float* y, int64_t d, float eps) {
  layer_norm_row_lanes<f32x16>(x, gamma, beta, y, d, eps);
}
#endif

}  // namespace

float softmax_numerators(float* row, int64_t n) {
#ifdef MCDL_ROWS_SIXTEEN_LANES
  if (has_avx512f()) return softmax_numerators_avx512(row, n);
#endif
  return softmax_numerators_lanes<f32x4, i32x4>(row, n);
}

void layer_norm_row(const float* x, const float* gamma, const float* beta, float* y, int64_t d, float eps) {
#ifdef MCDL_ROWS_SIXTEEN_LANES
  if (has_avx512f()) return layer_norm_row_avx512(x, gamma, beta, y, d, eps);
#endif
  layer_norm_row_lanes<f32x4>(x, gamma, beta, y, d, eps);
}

}  // namespace mcdl::cpu
