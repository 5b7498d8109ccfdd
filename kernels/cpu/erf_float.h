// erf in float, four lanes at a time (GCC vector extensions: SSE2, in every x86-64), for the
// CPU GELU, where glibc's scalar erff and its loop took a fifth of a demo run (perf).
//
// Three polynomials, fitted to erf in double (Chebyshev least squares, converted to monomials in
// a shifted argument u, evaluated by Horner in float):
//   |x| < 1:      x + x·r(u), u = 2x² − 1, r(u) ≈ erf(x)/x − 1 (x's own bits carry the result)
//   [1, 2.2):     p(u), u = (|x| − 1.6)·(1/0.6)
//   [2.2, 3.92):  q(u), u = (|x| − 3.06)·(1/0.86)
//   3.92 and up:  1, the float nearest erf there
// with erf's sign. Error against erf in double, over every float in [0, 4.5]: at most 1.14 ulp
// (glibc's erff: 0.97; CUDA's erff, which the GPU's GELU uses: 2). NaN stays NaN. No fused
// multiply-add is formed (baseline x86-64 has none), so every machine gives the same bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace mcdl::cpu {

using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = int32_t __attribute__((vector_size(16)));
// Sixteen lanes, for the AVX-512 path of kernels/cpu/gelu_float.cpp; the same operations lane by
// lane, so the same bits as four lanes.
using f32x16 = float __attribute__((vector_size(64)));
using i32x16 = int32_t __attribute__((vector_size(64)));

namespace detail {

// Always inlined, so that a caller compiled for wider vectors (target attributes) computes in them.
// Unrolled at compile time: as a loop, GCC reloads and broadcasts a coefficient per step.
template <class F, size_t N, size_t... I>
[[gnu::always_inline]] inline F horner(const float (&c)[N], F u, std::index_sequence<I...>) {
  F r = F{} + c[0];
  ((r = r * u + c[I + 1]), ...);
  return r;
}
template <class F, size_t N>
[[gnu::always_inline]] inline F horner(const float (&c)[N], F u) {
  return horner(c, u, std::make_index_sequence<N - 1>());
}

template <class F, class I>
[[gnu::always_inline]] inline F select(I mask, F if_set, F otherwise) {
  return reinterpret_cast<F>((mask & reinterpret_cast<I>(if_set)) | (~mask & reinterpret_cast<I>(otherwise)));
}

template <class I>
[[gnu::always_inline]] inline bool all_set(I mask) {
  bool all = true;
  for (size_t lane = 0; lane < sizeof(I) / sizeof(int32_t); ++lane) all = all && mask[lane] != 0;
  return all;
}

}  // namespace detail

// erf lane by lane, F a vector of floats and I the integers of its width.
template <class F, class I>
[[gnu::always_inline]] inline F erf_lanes(F x) {
  static constexpr float near_zero[] = {1.231640226e-06f, -1.766908099e-05f, 2.175119880e-04f, -2.285419498e-03f,
                                        1.985249855e-02f, -1.405360997e-01f, -3.453126177e-02f};
  static constexpr float middle[] = {-1.391696287e-06f, 1.355360109e-05f, -1.575478382e-05f, -1.674750965e-04f,
                                     7.227657479e-04f,  -3.410725913e-04f, -6.391097326e-03f, 2.587574534e-02f,
                                     -5.024393275e-02f, 5.233743042e-02f,  9.763484001e-01f};
  static constexpr float tail[] = {3.283849765e-06f,  9.412049167e-07f, -3.874650429e-05f, 1.186636873e-04f,
                                   -2.369421709e-04f, 3.643789969e-04f, -4.248788464e-04f, 3.641918302e-04f,
                                   -2.190727100e-04f, 8.323420479e-05f, 9.999849200e-01f};
  const I bits = reinterpret_cast<I>(x);
  const I sign = bits & static_cast<int32_t>(0x80000000u);
  const F a = reinterpret_cast<F>(bits & 0x7fffffff);
  const F small = a + a * detail::horner(near_zero, (a * a - 0.5f) * 2.0f);
  F y = small;
  const I is_small = a < 1.0f;
  // Most GELU inputs lie below 1: then the other two pieces are not needed.
  if (!detail::all_set(is_small)) {
    const F mid = detail::horner(middle, (a - 1.6f) * 1.6666666f);
    const F far = detail::horner(tail, (a - 3.06f) * 1.1627907f);
    const F one = F{} + 1.0f;
    y = detail::select(a >= 3.92f, one, far);  // NaN: every comparison false, and far is NaN
    y = detail::select(a < 2.2f, mid, y);
    y = detail::select(is_small, small, y);
  }
  return reinterpret_cast<F>(reinterpret_cast<I>(y) | sign);
}

inline f32x4 erf_f32x4(f32x4 x) { return erf_lanes<f32x4, i32x4>(x); }

// y[i] = f(x[i]) for n floats, f taking and giving four lanes (the last partial group through a
// padded copy). y may be x.
template <class F>
inline void map_f32x4(const float* x, float* y, int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    f32x4 v;
    std::memcpy(&v, x + i, sizeof v);
    v = f(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i == n) return;
  f32x4 v = {0, 0, 0, 0};
  std::memcpy(&v, x + i, static_cast<size_t>(n - i) * sizeof(float));
  v = f(v);
  std::memcpy(y + i, &v, static_cast<size_t>(n - i) * sizeof(float));
}

// y[i] = erf(x[i]) for n floats.
inline void erf_float(const float* x, float* y, int64_t n) { map_f32x4(x, y, n, erf_f32x4); }

}  // namespace mcdl::cpu
