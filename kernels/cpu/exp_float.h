// exp in float, four lanes at a time (GCC vector extensions: SSE2, in every x86-64), for the
// softmax of the host's bf16 attention, instead of a call to glibc's scalar expf per score.
//
// exp(x) = 2^n · e^r with n = x·log2(e) rounded to nearest and r = x − n·ln 2 (ln 2 in two parts,
// the first with enough trailing zero bits that n·ln2_hi is exact), |r| ≤ ln 2 / 2; e^r by
// Cephes's expf polynomial (1 + r + r²·p(r)); then two exact multiplications by powers of two
// (2^⌊n/2⌋ and 2^(n−⌊n/2⌋)), so that overflow gives +inf and underflow rounds into the subnormals
// as IEEE arithmetic does. Error against exp in double: within one ulp over the normal range (the
// test sweeps [−87.3, 88.72]; at most 0.92 there); NaN stays NaN. No fused multiply-add is formed, so every machine gives
// the same bits.
#pragma once
#include <cstdint>

#include "kernels/cpu/erf_float.h"  // f32x4, i32x4, horner, select

namespace mcdl::cpu {

inline f32x4 exp_f32x4(f32x4 x) {
  static constexpr float poly[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                   4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  constexpr float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
  // Adding 1.5·2^23 rounds x·log2(e) to an integer (to nearest, ties to even) in the low mantissa bits.
  constexpr float shifter = 12582912.0f;
  const f32x4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
  // Beyond [−104, 89] the result is 0 or +inf anyway; the clamp keeps n small (NaN passes through).
  const f32x4 inside = detail::select(x < -104.0f, zero - 104.0f, detail::select(x > 89.0f, zero + 89.0f, x));
  const f32x4 shifted = inside * log2e + shifter;
  const f32x4 n = shifted - shifter;
  const f32x4 r = (inside - n * ln2_hi) - n * ln2_lo;
  const f32x4 e_r = detail::horner<f32x4>(poly, r) * (r * r) + r + 1.0f;
  const i32x4 n_int = reinterpret_cast<i32x4>(shifted) - reinterpret_cast<i32x4>(zero + shifter);
  const i32x4 half = n_int >> 1;
  const f32x4 scale_1 = reinterpret_cast<f32x4>((half + 127) << 23);
  const f32x4 scale_2 = reinterpret_cast<f32x4>((n_int - half + 127) << 23);
  return detail::select(x != x, x, e_r * scale_1 * scale_2);
}

}  // namespace mcdl::cpu
