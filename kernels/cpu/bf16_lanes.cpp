// The AVX-512 build of kernels/cpu/bf16_lanes.h's conversion loops (the same operations, so the
// same bits), chosen at run time (bf16_lanes.h). Not built by clang, which only `make fuzz` uses.
#ifndef __clang__
#include "kernels/cpu/bf16_lanes.h"

namespace mcdl::cpu::detail {

__attribute__((target("avx512f"))) void widen_bf16_avx512(const bf16* x, float* y, int64_t n) {
  widen_bf16_lanes(x, y, n);
}

__attribute__((target("avx512f"))) void round_to_bf16_avx512(const float* x, bf16* y, int64_t n) {
  round_to_bf16_lanes(x, y, n);
}

}  // namespace mcdl::cpu::detail
#endif
