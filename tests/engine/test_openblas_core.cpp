// kernels/cpu/gemm.cpp's choice of OpenBLAS's kernels: on a processor with AVX2 and FMA, never the
// generic SSE3 set OpenBLAS 0.3.21 falls back to for models it does not know (three times slower
// on this project's Intel Xeon machines), unless the user asked for it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "kernels/cpu/gemm.h"

TEST_CASE("OpenBLAS runs kernels of the processor's vector width, not its SSE3 fallback") {
  const std::string core = mcdl::cpu::openblas_core();
  MESSAGE("OpenBLAS core: ", core);
  REQUIRE_FALSE(core.empty());
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;  // a real Prescott-class machine
  const char* asked = std::getenv("OPENBLAS_CORETYPE");  // the user's, or the one the program chose
  const bool user_asked_for_sse3 = asked && std::string(asked) == "Prescott";
  CHECK((core.rfind("Prescott", 0) != 0 || user_asked_for_sse3));
  // A product through the chosen kernels: 3×2 · 2×2.
  const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0.5f, -1};
  float c[6] = {};
  mcdl::cpu::gemm(false, false, 3, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
  const float expected[] = {2, -2, 5, -4, 8, -6};
  for (int i = 0; i < 6; ++i) CHECK(c[i] == expected[i]);
}
