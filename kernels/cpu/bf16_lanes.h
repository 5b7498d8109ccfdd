// bf16 ↔ float conversion of whole arrays, sixteen elements at a time with GCC vector extensions
// (the scalar loops, one branch per element for NaN, do not vectorize), bit for bit what bf16's
// constructor and float conversion give (kernels/bf16.h): round to nearest even, NaN kept quiet.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/bf16.h"

namespace mcdl::cpu {

namespace detail {
using u16x16 = uint16_t __attribute__((vector_size(32)));
using u32x16 = uint32_t __attribute__((vector_size(64)));
using s32x16 = int32_t __attribute__((vector_size(64)));

}  // namespace detail

// y[i] = float(x[i]) for i < n.
inline void widen_bf16(const bf16* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    detail::u16x16 half;
    std::memcpy(&half, x + i, sizeof half);
    const detail::u32x16 bits = __builtin_convertvector(half, detail::u32x16) << 16;
    std::memcpy(y + i, &bits, sizeof bits);
  }
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]);
}

// y[i] = bf16(x[i]) for i < n.
inline void round_to_bf16(const float* x, bf16* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // (In the loop, not a helper: a function taking 64-byte vectors would change ABI by target.)
    detail::u32x16 bits;
    std::memcpy(&bits, x + i, sizeof bits);
    const detail::u32x16 rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const detail::u32x16 quiet = (bits >> 16) | 0x40u;
    const auto is_nan = reinterpret_cast<detail::u32x16>(reinterpret_cast<detail::s32x16>(bits & 0x7fffffffu) > 0x7f800000);
    const detail::u16x16 half = __builtin_convertvector((quiet & is_nan) | (rounded & ~is_nan), detail::u16x16);
    std::memcpy(static_cast<void*>(y + i), &half, sizeof half);
  }
  for (; i < n; ++i) y[i] = bf16(x[i]);
}

}  // namespace mcdl::cpu
