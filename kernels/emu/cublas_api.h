// CPU stand-in for the cuBLAS entry points the project calls, for emulator builds. It keeps
// cuBLAS's semantics — column-major matrices, op(A) with leading dimensions, strided batches,
// alpha/beta through pointers, the data and compute types — so the row-major ↔ column-major
// translation at the call sites is exercised on the CPU. TF32 compute rounds the inputs to
// TF32 (10 mantissa bits) as the tensor cores do; accumulation is in the compute precision.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/bf16.h"
#include "kernels/emu/runtime_api.h"

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_INVALID_VALUE = 7,
                      CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
struct cublasContext {
  cudaStream_t stream = nullptr;
};
using cublasHandle_t = cublasContext*;

inline const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
inline cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

namespace mcdl::emu::detail {
// Element i of a matrix stored with dtype `type`, as double.
inline double blas_load(const void* base, cudaDataType type, int64_t i) {
  switch (type) {
    case CUDA_R_32F: return static_cast<const float*>(base)[i];
    case CUDA_R_64F: return static_cast<const double*>(base)[i];
    case CUDA_R_16BF: return to_double_value(static_cast<const bf16*>(base)[i]);
  }
  return 0;
}
inline float round_to_tf32(float x) {  // round to nearest even at 13 dropped mantissa bits
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0xfffu + ((bits >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&x, &bits, 4);
  return x;
}
}  // namespace mcdl::emu::detail

inline cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                 cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                                 const void* A, cudaDataType Atype, int lda, long long strideA,
                                                 const void* B, cudaDataType Btype, int ldb, long long strideB,
                                                 const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                 long long strideC, int batchCount, cublasComputeType_t computeType,
                                                 cublasGemmAlgo_t) {
  using mcdl::emu::detail::blas_load;
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || batchCount < 0 || lda < (transa == CUBLAS_OP_N ? m : k) ||
      ldb < (transb == CUBLAS_OP_N ? k : n) || ldc < m)
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool double_compute = computeType == CUBLAS_COMPUTE_64F;
  if (double_compute != (Ctype == CUDA_R_64F)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool tf32 = computeType == CUBLAS_COMPUTE_32F_FAST_TF32;
  // alpha and beta are in the compute type (host pointers).
  const double a_scale = double_compute ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  const double b_scale = double_compute ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  auto input = [&](const void* base, cudaDataType type, int64_t i) {
    const double v = blas_load(base, type, i);
    return tf32 ? static_cast<double>(mcdl::emu::detail::round_to_tf32(static_cast<float>(v))) : v;
  };
  for (int batch = 0; batch < batchCount; ++batch) {
    const int64_t a0 = batch * strideA, b0 = batch * strideB, c0 = batch * strideC;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double dot_double = 0;
        float dot_float = 0;
        for (int p = 0; p < k; ++p) {
          // Column-major: X(r, c) is at X[r + c·ldx]; op(X) = Xᵀ swaps r and c.
          const int64_t ai = transa == CUBLAS_OP_N ? i + int64_t(p) * lda : p + int64_t(i) * lda;
          const int64_t bi = transb == CUBLAS_OP_N ? p + int64_t(j) * ldb : j + int64_t(p) * ldb;
          const double product = input(A, Atype, a0 + ai) * input(B, Btype, b0 + bi);
          if (double_compute) dot_double += product;
          else dot_float += static_cast<float>(product);
        }
        const int64_t ci = c0 + i + int64_t(j) * ldc;
        const double dot = double_compute ? dot_double : dot_float;
        // beta = 0 never reads C (it may hold NaN), as in cuBLAS.
        const double old = b_scale == 0 ? 0.0 : blas_load(C, Ctype, ci);
        const double value = a_scale * dot + b_scale * old;
        if (Ctype == CUDA_R_64F) static_cast<double*>(C)[ci] = value;
        else static_cast<float*>(C)[ci] = static_cast<float>(value);
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}
