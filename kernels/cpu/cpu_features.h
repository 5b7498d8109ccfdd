// What the processor offers beyond baseline x86-64, asked once per process: the host kernels with
// an AVX-512 build (GELU, the float row passes, the bf16 conversions, RandAugment's
// float passes, the resize) choose it at run time.
#pragma once

namespace mcdl::cpu {

inline bool has_avx512f() {
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported;
}

// The resize's integer passes, where AVX-512 is missing.
inline bool has_avx2() {
  static const bool supported = __builtin_cpu_supports("avx2");
  return supported;
}

// AVX-512's byte and word lanes (the RandAugment passes over uint8 pixels).
inline bool has_avx512bw() {
  static const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return supported;
}

}  // namespace mcdl::cpu
