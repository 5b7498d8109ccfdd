#include "kernels/cuda/gemm.h"

#include <limits>

#include "kernels/cuda/cuda_common.h"

#ifdef __CUDACC__
#include <cublas_v2.h>
#else
#include "kernels/emu/cublas_api.h"
#endif

#define MCDL_CUBLAS_CHECK(call)                                                                        \
  do {                                                                                                 \
    const cublasStatus_t mcdl_status_ = (call);                                                        \
    if (mcdl_status_ != CUBLAS_STATUS_SUCCESS)                                                         \
      ::mcdl::cuda::throw_cuda_error(#call, __FILE__, __LINE__, cublasGetStatusString(mcdl_status_)); \
  } while (0)

namespace mcdl::cuda {
namespace {

cublasHandle_t cublas_handle() {
  static const cublasHandle_t handle = [] {
    cublasHandle_t created;
    MCDL_CUBLAS_CHECK(cublasCreate(&created));
    MCDL_CUBLAS_CHECK(cublasSetStream(created, engine_stream()));
    return created;
  }();
  return handle;
}

int as_int(int64_t value, const char* what) {
  if (value < 0 || value > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string("gemm: ") + what + " = " + std::to_string(value) +
                                " is outside cuBLAS's 32-bit range");
  return static_cast<int>(value);
}

// Row-major C (m×n) = op(A)·op(B) is column-major Cᵀ (n×m) = op(B)ᵀ·op(A)ᵀ, and a row-major
// matrix read as column-major is its transpose: so cuBLAS gets B before A, n before m, and
// the same transpose flags.
void strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* alpha, const void* a,
                     cudaDataType a_type, int64_t lda, int64_t stride_a, const void* b, cudaDataType b_type,
                     int64_t ldb, int64_t stride_b, const void* beta, void* c, cudaDataType c_type, int64_t ldc,
                     int64_t stride_c, int64_t batch, cublasComputeType_t compute) {
  if (batch > 1 && stride_c == 0) throw std::invalid_argument("gemm: C cannot be shared by a batch");
  if (m == 0 || n == 0 || batch == 0) return;
  MCDL_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas_handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, as_int(n, "n"),
      as_int(m, "m"), as_int(k, "k"), alpha, b, b_type, as_int(ldb, "ldb"), stride_b, a, a_type, as_int(lda, "lda"),
      stride_a, beta, c, c_type, as_int(ldc, "ldc"), stride_c, as_int(batch, "batch"), compute,
      CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
          int64_t stride_c, int64_t batch, GemmMode mode) {
  strided_batched(trans_a, trans_b, m, n, k, &alpha, a, CUDA_R_32F, lda, stride_a, b, CUDA_R_32F, ldb, stride_b,
                  &beta, c, CUDA_R_32F, ldc, stride_c, batch,
                  mode == GemmMode::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          int64_t stride_a, const double* b, int64_t ldb, int64_t stride_b, double beta, double* c, int64_t ldc,
          int64_t stride_c, int64_t batch, GemmMode) {
  strided_batched(trans_a, trans_b, m, n, k, &alpha, a, CUDA_R_64F, lda, stride_a, b, CUDA_R_64F, ldb, stride_b,
                  &beta, c, CUDA_R_64F, ldc, stride_c, batch, CUBLAS_COMPUTE_64F);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a, int64_t lda,
          int64_t stride_a, const bf16* b, int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
          int64_t stride_c, int64_t batch) {
  strided_batched(trans_a, trans_b, m, n, k, &alpha, a, CUDA_R_16BF, lda, stride_a, b, CUDA_R_16BF, ldb, stride_b,
                  &beta, c, CUDA_R_32F, ldc, stride_c, batch, CUBLAS_COMPUTE_32F);
}

}  // namespace mcdl::cuda
