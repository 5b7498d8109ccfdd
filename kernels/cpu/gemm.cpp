#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

// OpenBLAS's own entry points (exported by its DYNAMIC_ARCH builds, Debian's among them): its core's
// name, and the two halves of its kernel selection. Weak: a build without them leaves its choice.
extern "C" {
char* openblas_get_corename(void);
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace mcdl::cpu {
namespace {

// Set when choose_openblas_core replaced OpenBLAS's fallback (openblas_core says so).
const char* chosen_core = nullptr;

// Runs before main, after OpenBLAS's own initializer (a library's runs before the executable's),
// while nothing multiplies yet. OpenBLAS falls back to its generic SSE3 kernels, "Prescott", for a
// processor it does not know; where the processor has AVX2 and FMA, which no Prescott has, the
// kernels for its features are selected again through OpenBLAS's own $OPENBLAS_CORETYPE, which
// the processes it starts then inherit.
__attribute__((constructor)) void choose_openblas_core() {
  __builtin_cpu_init();  // libgcc's processor tables, whatever the order of the constructors
  if (std::getenv("OPENBLAS_CORETYPE") || !gotoblas_dynamic_init || !gotoblas_dynamic_quit ||
      std::strcmp(openblas_get_corename(), "Prescott") != 0 || !__builtin_cpu_supports("avx2") ||
      !__builtin_cpu_supports("fma"))
    return;
  const char* core = "Haswell";
  if (__builtin_cpu_is("amd"))
    core = "Zen";
  else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl"))
    core = "SkylakeX";
  if (setenv("OPENBLAS_CORETYPE", core, 0) != 0) return;
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  chosen_core = core;
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

std::string openblas_core() {
  const std::string name = openblas_get_corename();
  return chosen_core ? name + " (chosen by this program: OpenBLAS did not know the processor and fell back to its "
                              "SSE3 kernels)"
                     : name;
}

}  // namespace mcdl::cpu
