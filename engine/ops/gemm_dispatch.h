// The one place an op asks for a matrix product on whichever device holds its buffers
// (engine-internal: used by linalg.cpp and conv.cpp).
#pragma once
#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/ops/linalg.h"

namespace mcdl {

// The kernels' form of the matmul precision.
inline GemmMode gemm_mode() {
  switch (engine_settings().matmul_precision) {
    case MatmulPrecision::tf32: return GemmMode::tf32;
    case MatmulPrecision::bf16: return GemmMode::bf16;
    case MatmulPrecision::fp32: break;
  }
  return GemmMode::fp32;
}

// C_i = alpha·op(A_i)·op(B_i), or C_i += alpha·op(A_i)·op(B_i) in Accumulate mode, for i < batch;
// row-major, element strides between batch entries (0 = shared by every entry, not for C).
template <class T>
void batched_gemm(Device device, int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb, int64_t stride_b, T* c,
                  int64_t ldc, int64_t stride_c, GradMode mode, T alpha = T(1)) {
  const T beta = mode == GradMode::Overwrite ? T(0) : T(1);
  on_device(device, [&](auto kernels) {
    kernels.gemm(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch,
                 gemm_mode());
  });
}

template <class T>
void single_gemm(Device device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                 const T* b, int64_t ldb, T* c, int64_t ldc, GradMode mode) {
  batched_gemm(device, 1, trans_a, trans_b, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, mode);
}

}  // namespace mcdl
