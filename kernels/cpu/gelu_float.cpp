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

namespace mcdl::cpu {
namespace {

template <class F, class I>
[[gnu::always_inline]] inline F gelu_lanes(F v) {
  constexpr float inv_sqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
  return 0.5f * v * (1.0f + erf_lanes<F, I>(v * inv_sqrt2));
}

f32x4 gelu_f32x4(f32x4 v) { return gelu_lanes<f32x4, i32x4>(v); }

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
#endif

}  // namespace

void gelu_float(const float* x, float* y, int64_t n) {
#ifdef MCDL_GELU_SIXTEEN_LANES
  if (has_avx512f()) return gelu_avx512(x, y, n);
#endif
  map_f32x4(x, y, n, gelu_f32x4);
}

}  // namespace mcdl::cpu
