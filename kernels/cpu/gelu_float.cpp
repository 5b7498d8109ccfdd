// Before any definition: the AVX-512 version must not fuse a·b + c (the same bits as SSE2, which has
// no FMA), and its sixteen-lane helpers are always inlined, so their by-value vector ABI never applies.
// clang (only `make fuzz` compiles with it) rejects passing 64-byte vectors to helpers of another
// target even when they are inlined: there every processor takes the four-lane path.
#ifndef __clang__
#define MCDL_GELU_SIXTEEN_LANES 1
#pragma GCC optimize("fp-contract=off")
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#include "kernels/cpu/gelu_float.h"

#include <cstring>
#include <numbers>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/erf_float.h"
#include "kernels/cpu/exp_float.h"

namespace mcdl::cpu {
namespace {

template <class F, class I>
[[gnu::always_inline]] inline F gelu_lanes(F v) {
  constexpr float inv_sqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
  return 0.5f * v * (1.0f + erf_lanes<F, I>(v * inv_sqrt2));
}

f32x4 gelu_f32x4(f32x4 v) { return gelu_lanes<f32x4, i32x4>(v); }

// d gelu/dx = Φ(x) + x·φ(x), in the CUDA kernel's order of operations.
template <class F, class I>
[[gnu::always_inline]] inline F gelu_slope_lanes(F v) {
  constexpr float inv_sqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
  constexpr float inv_sqrt_2pi = static_cast<float>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
  return 0.5f * (1.0f + erf_lanes<F, I>(v * inv_sqrt2)) + v * inv_sqrt_2pi * exp_lanes<F, I>(-0.5f * v * v);
}

// One group of lanes of the backward: dx = g·slope (overwrite) or dx + g·slope.
template <class F, class I>
[[gnu::always_inline]] inline void gelu_backward_group(const float* x, const float* g, float* dx, bool overwrite) {
  F v, grad;
  std::memcpy(&v, x, sizeof v);
  std::memcpy(&grad, g, sizeof grad);
  F out = grad * gelu_slope_lanes<F, I>(v);
  if (!overwrite) {
    F before;
    std::memcpy(&before, dx, sizeof before);
    out = before + out;
  }
  std::memcpy(dx, &out, sizeof out);
}

// The elements past the last whole group of four, through zero-padded copies.
void gelu_backward_rest(const float* x, const float* g, float* dx, int64_t n, bool overwrite) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) gelu_backward_group<f32x4, i32x4>(x + i, g + i, dx + i, overwrite);
  if (i == n) return;
  float xs[4] = {}, gs[4] = {}, out[4] = {};
  const auto bytes = static_cast<size_t>(n - i) * sizeof(float);
  std::memcpy(xs, x + i, bytes);
  std::memcpy(gs, g + i, bytes);
  if (!overwrite) std::memcpy(out, dx + i, bytes);
  gelu_backward_group<f32x4, i32x4>(xs, gs, out, overwrite);
  std::memcpy(dx + i, out, bytes);
}

#ifdef MCDL_GELU_SIXTEEN_LANES
__attribute__((target("avx512f"))) void gelu_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    f32x16 v;
    std::memcpy(&v, x + i, sizeof v);
    v = gelu_lanes<f32x16, i32x16>(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  map_f32x4(x + i, y + i, n - i, gelu_f32x4);
}

__attribute__((target("avx512f"))) void gelu_backward_avx512(const float* x, const float* g, float* dx, int64_t n,
                                                             bool overwrite) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) gelu_backward_group<f32x16, i32x16>(x + i, g + i, dx + i, overwrite);
  gelu_backward_rest(x + i, g + i, dx + i, n - i, overwrite);
}
#endif

}  // namespace

void gelu_float(const float* x, float* y, int64_t n) {
#ifdef MCDL_GELU_SIXTEEN_LANES
  if (has_avx512f()) return gelu_avx512(x, y, n);
#endif
  map_f32x4(x, y, n, gelu_f32x4);
}

}  // namespace mcdl::cpu

namespace mcdl::cpu {

void gelu_backward_float(const float* x, const float* grad_out, float* grad_in, int64_t n, bool overwrite) {
#ifdef MCDL_GELU_SIXTEEN_LANES
  if (has_avx512f()) return gelu_backward_avx512(x, grad_out, grad_in, n, overwrite);
#endif
  gelu_backward_rest(x, grad_out, grad_in, n, overwrite);
}

}  // namespace mcdl::cpu
