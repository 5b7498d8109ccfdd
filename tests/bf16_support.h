// The tests whose reference is the CPU's bf16 product (oneDNN's): Debian's oneDNN runs bf16
// products on AVX-512 processors only, so on an AVX2 machine such a case says so and ends early
// (the product refuses --precision bf16 there with a message; the GPU suite still runs them on a
// GPU machine's processor, which has AVX-512).
#pragma once
#include <doctest/doctest.h>

#include "kernels/cpu/gemm_bf16.h"

namespace mcdl::testing {

inline bool cpu_runs_bf16_products() {
  if (cpu::bf16_products_available()) return true;
  MESSAGE("oneDNN runs no bf16 product on this processor (it needs AVX-512): the case is left out here");
  return false;
}

}  // namespace mcdl::testing
