// Host versions of the CUDA device functions kernels call: atomics, math intrinsics, bit and
// conversion intrinsics, load/store hints and the integer min/max overloads. Emulator builds only.
// The intrinsics compute the exact IEEE result where the GPU's fast versions approximate
// (__expf, __fdividef, ...): GPU tolerances have to come from GPU runs.
#pragma once
#include <math.h>

#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace mcdl::emu::detail {
template <class T, class... Allowed>
concept one_of = (std::same_as<T, Allowed> || ...);

// CUDA's float-to-integer conversions saturate (NaN gives 0) where a C++ cast is undefined.
template <class Int>
Int saturate_to(float rounded) {
  if (rounded != rounded) return 0;
  if (rounded <= static_cast<float>(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
  if (rounded >= static_cast<float>(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
  return static_cast<Int>(rounded);
}
}  // namespace mcdl::emu::detail

// Atomics. The emulated threads of a launch share one OS thread and switch only inside barriers
// and warp operations, so a plain read-modify-write cannot be interleaved with another thread's:
// it is atomic as far as any kernel can observe. The value parameter is not deduced, so
// atomicAdd(&unsigned_counter, 1) works as in CUDA.
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned, unsigned long long, float, double> T
atomicAdd(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  *address = old + value;
  return old;
}
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned> T atomicSub(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  *address = old - value;
  return old;
}
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned, unsigned long long, float> T
atomicExch(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  *address = value;
  return old;
}
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned, long long, unsigned long long> T
atomicMax(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  if (old < value) *address = value;
  return old;
}
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned, long long, unsigned long long> T
atomicMin(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  if (value < old) *address = value;
  return old;
}
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned, unsigned long long, unsigned short> T
atomicCAS(T* address, std::type_identity_t<T> compare, std::type_identity_t<T> value) {
  const T old = *address;
  if (old == compare) *address = value;
  return old;
}
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned, unsigned long long> T atomicAnd(T* address,
                                                                                     std::type_identity_t<T> value) {
  const T old = *address;
  *address = old & value;
  return old;
}
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned, unsigned long long> T atomicOr(T* address,
                                                                                    std::type_identity_t<T> value) {
  const T old = *address;
  *address = old | value;
  return old;
}
template <class T>
requires mcdl::emu::detail::one_of<T, int, unsigned, unsigned long long> T atomicXor(T* address,
                                                                                     std::type_identity_t<T> value) {
  const T old = *address;
  *address = old ^ value;
  return old;
}
inline unsigned atomicInc(unsigned* address, unsigned limit) {
  const unsigned old = *address;
  *address = old >= limit ? 0 : old + 1;
  return old;
}
inline unsigned atomicDec(unsigned* address, unsigned limit) {
  const unsigned old = *address;
  *address = old == 0 || old > limit ? limit : old - 1;
  return old;
}

// Memory fences order nothing when the threads run one at a time.
inline void __threadfence() {}
inline void __threadfence_block() {}

// Load and store cache hints.
template <class T>
T __ldg(const T* address) {
  return *address;
}
template <class T>
T __ldcs(const T* address) {
  return *address;
}
template <class T>
T __ldcg(const T* address) {
  return *address;
}
template <class T>
void __stcs(T* address, T value) {
  *address = value;
}
template <class T>
void __stcg(T* address, T value) {
  *address = value;
}

// Math intrinsics. <math.h> provides expf, erff, fmaxf, tanhf, ... in the global namespace.
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __tanhf(float x) { return tanhf(x); }
inline void __sincosf(float x, float* sine, float* cosine) {
  *sine = sinf(x);
  *cosine = cosf(x);
}
inline float __fdividef(float x, float y) { return x / y; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fsub_rn(float x, float y) { return x - y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fdiv_rn(float x, float y) { return x / y; }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline double __dadd_rn(double x, double y) { return x + y; }
inline double __dsub_rn(double x, double y) { return x - y; }
inline double __dmul_rn(double x, double y) { return x * y; }
inline double __fma_rn(double x, double y, double z) { return fma(x, y, z); }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : x > 0.0f ? x : 0.0f; }  // NaN gives 0

// Conversions (rounding: rn nearest even, rz toward zero, rd down, ru up).
inline int __float2int_rn(float x) { return mcdl::emu::detail::saturate_to<int>(nearbyintf(x)); }
inline int __float2int_rz(float x) { return mcdl::emu::detail::saturate_to<int>(truncf(x)); }
inline int __float2int_rd(float x) { return mcdl::emu::detail::saturate_to<int>(floorf(x)); }
inline int __float2int_ru(float x) { return mcdl::emu::detail::saturate_to<int>(ceilf(x)); }
inline unsigned __float2uint_rn(float x) { return mcdl::emu::detail::saturate_to<unsigned>(nearbyintf(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }

// Bit intrinsics.
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __ffsll(long long x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1; }

// CUDA's global min and max: integer overloads compare as integers (a signed with an unsigned
// operand of the same size as unsigned, as in CUDA), float and double follow fminf/fmaxf (a NaN
// operand loses).
#define MCDL_EMU_MIN_MAX(Signed, Unsigned)                                               \
  inline Signed min(Signed a, Signed b) { return b < a ? b : a; }                        \
  inline Signed max(Signed a, Signed b) { return a < b ? b : a; }                        \
  inline Unsigned min(Unsigned a, Unsigned b) { return b < a ? b : a; }                  \
  inline Unsigned max(Unsigned a, Unsigned b) { return a < b ? b : a; }                  \
  inline Unsigned min(Signed a, Unsigned b) { return min(static_cast<Unsigned>(a), b); } \
  inline Unsigned min(Unsigned a, Signed b) { return min(a, static_cast<Unsigned>(b)); } \
  inline Unsigned max(Signed a, Unsigned b) { return max(static_cast<Unsigned>(a), b); } \
  inline Unsigned max(Unsigned a, Signed b) { return max(a, static_cast<Unsigned>(b)); }
MCDL_EMU_MIN_MAX(int, unsigned)
MCDL_EMU_MIN_MAX(long, unsigned long)
MCDL_EMU_MIN_MAX(long long, unsigned long long)
#undef MCDL_EMU_MIN_MAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
