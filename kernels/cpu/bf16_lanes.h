// bf16 ↔ float conversion of whole arrays, sixteen elements at a time with GCC vector extensions
// (the scalar loops, one branch per element for NaN, do not vectorize), bit for bit what bf16's
// constructor and float conversion give (kernels/bf16.h): round to nearest even, NaN kept quiet.
// Arrays longer than a group go to an AVX-512 build of the same loops where the processor has it
// (kernels/cpu/bf16_lanes.cpp): baseline x86-64 has no instruction to narrow 32-bit lanes to 16,
// and its rounding is about five times slower.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/bf16.h"
#include "kernels/cpu/cpu_features.h"

namespace mcdl::cpu {

namespace detail {
using u16x16 = uint16_t __attribute__((vector_size(32)));
using u32x16 = uint32_t __attribute__((vector_size(64)));
using s32x16 = int32_t __attribute__((vector_size(64)));

// The loops themselves, compiled for whichever target the caller has.
[[gnu::always_inline]] inline void widen_bf16_lanes(const bf16* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    u16x16 half;
    std::memcpy(&half, x + i, sizeof half);
    const u32x16 bits = __builtin_convertvector(half, u32x16) << 16;
    std::memcpy(y + i, &bits, sizeof bits);
  }
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]);
}

[[gnu::always_inline]] inline void round_to_bf16_lanes(const float* x, bf16* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // (In the loop, not a helper: a function taking 64-byte vectors would change ABI by target.)
    u32x16 bits;
    std::memcpy(&bits, x + i, sizeof bits);
    const u32x16 rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const u32x16 quiet = (bits >> 16) | 0x40u;
    const auto is_nan = reinterpret_cast<u32x16>(reinterpret_cast<s32x16>(bits & 0x7fffffffu) > 0x7f800000);
    const u16x16 half = __builtin_convertvector((quiet & is_nan) | (rounded & ~is_nan), u16x16);
    std::memcpy(static_cast<void*>(y + i), &half, sizeof half);
  }
  for (; i < n; ++i) y[i] = bf16(x[i]);
}

#ifndef __clang__  // clang (only `make fuzz` builds with it) keeps the baseline loops
// kernels/cpu/bf16_lanes.cpp: the loops above built for AVX-512.
void widen_bf16_avx512(const bf16* x, float* y, int64_t n);
void round_to_bf16_avx512(const float* x, bf16* y, int64_t n);
#endif

}  // namespace detail

// y[i] = float(x[i]) for i < n.
inline void widen_bf16(const bf16* x, float* y, int64_t n) {
#ifndef __clang__
  // (A caller's constant n ≤ 16 drops the branch, so a caller built for AVX-512 inlines the loop.)
  if (n > 16 && has_avx512f()) return detail::widen_bf16_avx512(x, y, n);
#endif
  detail::widen_bf16_lanes(x, y, n);
}

// y[i] = bf16(x[i]) for i < n.
inline void round_to_bf16(const float* x, bf16* y, int64_t n) {
#ifndef __clang__
  if (n > 16 && has_avx512f()) return detail::round_to_bf16_avx512(x, y, n);
#endif
  detail::round_to_bf16_lanes(x, y, n);
}

}  // namespace mcdl::cpu
