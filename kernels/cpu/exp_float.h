// exp in float, lane by lane on GCC vectors of any width (four lanes: SSE2, in every x86-64;
// sixteen: AVX-512 in kernels/cpu/row_float.cpp), for the softmax of the host's bf16 attention,
// instead of a call to glibc's scalar expf per score.
//
// exp(x) = 2^n · e^r with n = x·log2(e) rounded to nearest and r = x − n·ln 2 (ln 2 in two parts,
// the first with enough trailing zero bits that n·ln2_hi is exact), |r| ≤ ln 2 / 2; e^r by
// Cephes's expf polynomial (1 + r + r²·p(r)); then two exact multiplications by powers of two
// (2^⌊n/2⌋ and 2^(n−⌊n/2⌋)), so that overflow gives +inf and underflow rounds into the subnormals
// as IEEE arithmetic does. Error against exp in double: within one ulp over the normal range (the
// test sweeps [−87.3, 88.72]; at most 0.92 there); NaN stays NaN. No fused multiply-add is formed,
// so every machine gives the same bits.
#pragma once
#include <cstdint>

#include "kernels/cpu/erf_float.h"  // f32x4, i32x4, horner, select

namespace mcdl::cpu {

// F a vector of floats and I the integers of its width.
template <class F, class I>
[[gnu::always_inline]] inline F exp_lanes(F x) {
  static constexpr float poly[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                   4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  constexpr float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
  // Adding 1.5·2^23 rounds x·log2(e) to an integer (to nearest, ties to even) in the low mantissa bits.
  constexpr float shifter = 12582912.0f;
  const F zero = F{};
  // Beyond [−104, 89] the result is 0 or +inf anyway; the clamp keeps n small (NaN passes through).
  const F inside = detail::select(x < -104.0f, zero - 104.0f, detail::select(x > 89.0f, zero + 89.0f, x));
  const F shifted = inside * log2e + shifter;
  const F n = shifted - shifter;
  const F r = (inside - n * ln2_hi) - n * ln2_lo;
  const F e_r = detail::horner<F>(poly, r) * (r * r) + r + 1.0f;
  const I n_int = reinterpret_cast<I>(shifted) - reinterpret_cast<I>(zero + shifter);
  const I half = n_int >> 1;
  const F scale_1 = reinterpret_cast<F>((half + 127) << 23);
  const F scale_2 = reinterpret_cast<F>((n_int - half + 127) << 23);
  return detail::select(x != x, x, e_r * scale_1 * scale_2);
}

inline f32x4 exp_f32x4(f32x4 x) { return exp_lanes<f32x4, i32x4>(x); }

}  // namespace mcdl::cpu
