// CPU stand-in for the cuBLAS and cuBLASLt entry points the project calls, for emulator builds.
// It keeps their semantics — column-major matrices, op(A) with leading dimensions, strided
// batches, alpha/beta through host pointers in the scale type, the data and compute types,
// cuBLASLt's descriptors, heuristic and its bias and bias-then-GELU epilogues — so the row-major
// ↔ column-major translation at the call sites is exercised on the CPU. TF32 compute rounds the inputs to
// TF32 (10 mantissa bits) as the tensor cores do; accumulation is in the compute precision.
// The products run at the call, or are recorded when the stream is being captured into a CUDA
// graph (stream_capture.h), their host scalars and descriptors as they were at the call.
// Names and values are those of cublas_api.h / cublasLt.h; only what the project uses exists.
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/bf16.h"
#include "kernels/gelu_form.h"
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
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = mcdl::emu::make_counted<cublasContext>("cublas handles");
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  return mcdl::emu::destroy_counted(handle, "cublas handles") ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
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

// One column-major product: D = alpha·op(A)·op(B) + beta·C (+ bias[i] on row i when bias is
// set, in the type of D), op(A) m×k, op(B) k×n, then with `gelu` the tanh GELU of each fp32
// result (cuBLASLt's GELU epilogue). C is never read when beta = 0 (it may hold NaN), as in
// cuBLAS; C and D may be the same matrix.
inline void column_major_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                              const void* A, cudaDataType a_type, int64_t lda, const void* B, cudaDataType b_type,
                              int64_t ldb, double beta, const void* C, cudaDataType c_type, int64_t ldc, void* D,
                              cudaDataType d_type, int64_t ldd, const void* bias, cublasComputeType_t compute,
                              bool gelu = false) {
  const bool double_compute = compute == CUBLAS_COMPUTE_64F, tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  auto input = [&](const void* base, cudaDataType type, int64_t i) {
    const double v = blas_load(base, type, i);
    return tf32 ? static_cast<double>(round_to_tf32(static_cast<float>(v))) : v;
  };
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double dot_double = 0;
      float dot_float = 0;
      for (int64_t p = 0; p < k; ++p) {
        // Column-major: X(r, c) is at X[r + c·ldx]; op(X) = Xᵀ swaps r and c.
        const int64_t ai = trans_a ? p + i * lda : i + p * lda;
        const int64_t bi = trans_b ? j + p * ldb : p + j * ldb;
        const double product = input(A, a_type, ai) * input(B, b_type, bi);
        if (double_compute) dot_double += product;
        else dot_float += static_cast<float>(product);
      }
      const double dot = double_compute ? dot_double : dot_float;
      const double old = beta == 0 ? 0.0 : blas_load(C, c_type, i + j * ldc);
      double value = alpha * dot + beta * old + (bias ? blas_load(bias, d_type, i) : 0.0);
      if (gelu) value = mcdl::gelu_tanh(static_cast<float>(value));
      // A bf16 D gets the fp32 result rounded once, as the library's epilogue converts it.
      if (d_type == CUDA_R_64F) static_cast<double*>(D)[i + j * ldd] = value;
      else if (d_type == CUDA_R_16BF) static_cast<bf16*>(D)[i + j * ldd] = bf16(static_cast<float>(value));
      else static_cast<float*>(D)[i + j * ldd] = static_cast<float>(value);
    }
}

// The checks cuBLAS's batched products make of their arguments.
inline cublasStatus_t gemm_arguments(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                     int m, int n, int k, int lda, int ldb, int ldc, int batch_count,
                                     cudaDataType c_type, cublasComputeType_t compute) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || batch_count < 0 || lda < (transa == CUBLAS_OP_N ? m : k) ||
      ldb < (transb == CUBLAS_OP_N ? k : n) || ldc < m)
    return CUBLAS_STATUS_INVALID_VALUE;
  if ((compute == CUBLAS_COMPUTE_64F) != (c_type == CUDA_R_64F)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!stream_usable(handle->stream)) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

// alpha and beta, host pointers in the compute type, as doubles.
inline std::pair<double, double> gemm_scales(const void* alpha, const void* beta, cublasComputeType_t compute) {
  if (compute == CUBLAS_COMPUTE_64F) return {*static_cast<const double*>(alpha), *static_cast<const double*>(beta)};
  return {*static_cast<const float*>(alpha), *static_cast<const float*>(beta)};
}
}  // namespace mcdl::emu::detail

inline cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                 cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                                 const void* A, cudaDataType Atype, int lda, long long strideA,
                                                 const void* B, cudaDataType Btype, int ldb, long long strideB,
                                                 const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                 long long strideC, int batchCount, cublasComputeType_t computeType,
                                                 cublasGemmAlgo_t) {
  if (const cublasStatus_t status =
          mcdl::emu::detail::gemm_arguments(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount, Ctype,
                                            computeType);
      status != CUBLAS_STATUS_SUCCESS)
    return status;
  // Queued on the handle's stream (recorded when it is being captured), the scales as read now.
  const auto [a_scale, b_scale] = mcdl::emu::detail::gemm_scales(alpha, beta, computeType);
  mcdl::emu::on_stream(handle->stream, [=] {
    auto element_bytes = [](cudaDataType type) { return type == CUDA_R_64F ? 8 : type == CUDA_R_32F ? 4 : 2; };
    for (int batch = 0; batch < batchCount; ++batch) {
      const auto* a = static_cast<const char*>(A) + batch * strideA * element_bytes(Atype);
      const auto* b = static_cast<const char*>(B) + batch * strideB * element_bytes(Btype);
      auto* c = static_cast<char*>(C) + batch * strideC * element_bytes(Ctype);
      mcdl::emu::detail::column_major_gemm(transa == CUBLAS_OP_T, transb == CUBLAS_OP_T, m, n, k, a_scale, a, Atype,
                                           lda, b, Btype, ldb, b_scale, c, Ctype, ldc, c, Ctype, ldc, nullptr,
                                           computeType);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

// The batched form with arrays of matrix pointers (in device memory, which the emulator's is).
inline cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* const Aarray[],
                                          cudaDataType Atype, int lda, const void* const Barray[], cudaDataType Btype,
                                          int ldb, const void* beta, void* const Carray[], cudaDataType Ctype, int ldc,
                                          int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  if (!Aarray || !Barray || !Carray) return batchCount == 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
  if (const cublasStatus_t status = mcdl::emu::detail::gemm_arguments(handle, transa, transb, m, n, k, lda, ldb, ldc,
                                                                     batchCount, Ctype, computeType);
      status != CUBLAS_STATUS_SUCCESS)
    return status;
  // The pointer arrays are device memory: read when the products run.
  const auto [a_scale, b_scale] = mcdl::emu::detail::gemm_scales(alpha, beta, computeType);
  mcdl::emu::on_stream(handle->stream, [=] {
    for (int batch = 0; batch < batchCount; ++batch)
      mcdl::emu::detail::column_major_gemm(transa == CUBLAS_OP_T, transb == CUBLAS_OP_T, m, n, k, a_scale,
                                           Aarray[batch], Atype, lda, Barray[batch], Btype, ldb, b_scale,
                                           Carray[batch], Ctype, ldc, Carray[batch], Ctype, ldc, nullptr,
                                           computeType);
  });
  return CUBLAS_STATUS_SUCCESS;
}

// ---- cuBLASLt --------------------------------------------------------------------------------
// Stricter than the library where a looser use would be a bug at the call site: every
// attribute size is checked as cuBLASLt does, an algorithm is accepted only for the problem
// (shapes, types, transposes, epilogue) it was chosen for, and the buffers must be as aligned as
// the heuristic was told (preferences, default 256 bytes; the bias pointer as it was when the
// heuristic ran) and the workspace as large as the algorithm asked for and 256-byte aligned.

enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,  // int32_t (cublasOperation_t)
  CUBLASLT_MATMUL_DESC_TRANSB = 4,  // int32_t
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,  // uint32_t (cublasLtEpilogue_t)
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,  // const void*, the bias vector (length = rows of D, type of D)
};
enum cublasLtEpilogue_t { CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_BIAS = 4, CUBLASLT_EPILOGUE_GELU_BIAS = 36 };
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,  // uint64_t, default 0
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,  // uint32_t, default 256 (likewise B, C, D)
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

struct cublasLtContext {};
using cublasLtHandle_t = cublasLtContext*;
struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute;
  cudaDataType scale;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
};
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t*;
struct cublasLtMatrixLayoutOpaque_t {  // column-major (cuBLASLt's default order), one matrix
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t*;
struct cublasLtMatmulPreferenceOpaque_t {
  uint64_t max_workspace = 0;
  uint32_t min_alignment[4] = {256, 256, 256, 256};  // A, B, C, D
};
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque_t*;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = mcdl::emu::make_counted<cublasLtContext>("cublasLt handles");
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  return mcdl::emu::destroy_counted(handle, "cublasLt handles") ? CUBLAS_STATUS_SUCCESS
                                                                : CUBLAS_STATUS_NOT_INITIALIZED;
}

inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                               cudaDataType scale) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  *desc = mcdl::emu::make_counted<cublasLtMatmulDescOpaque_t>("cublasLt descriptors", compute, scale);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  mcdl::emu::destroy_counted(desc, "cublasLt descriptors");
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                     const void* buf, size_t size) {
  if (!desc || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
      if (size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      int32_t op;
      std::memcpy(&op, buf, size);
      if (op != CUBLAS_OP_N && op != CUBLAS_OP_T) return CUBLAS_STATUS_INVALID_VALUE;
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? desc->transa : desc->transb) = op;
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      if (size != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&desc->epilogue, buf, size);
      return desc->epilogue == CUBLASLT_EPILOGUE_DEFAULT || desc->epilogue == CUBLASLT_EPILOGUE_BIAS ||
                     desc->epilogue == CUBLASLT_EPILOGUE_GELU_BIAS
                 ? CUBLAS_STATUS_SUCCESS
                 : CUBLAS_STATUS_NOT_SUPPORTED;  // the stand-in emulates no other epilogue
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      if (size != sizeof(const void*)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&desc->bias, buf, size);  // buf holds the pointer; it is not the bias itself
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                                 uint64_t cols, int64_t ld) {
  // The leading dimension must keep columns apart: ld ≥ rows, as cuBLASLt requires.
  if (!layout || ld < 1 || static_cast<uint64_t>(ld) < rows) return CUBLAS_STATUS_INVALID_VALUE;
  *layout = mcdl::emu::make_counted<cublasLtMatrixLayoutOpaque_t>("cublasLt descriptors", type, rows, cols, ld);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  mcdl::emu::destroy_counted(layout, "cublasLt descriptors");
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = mcdl::emu::make_counted<cublasLtMatmulPreferenceOpaque_t>("cublasLt descriptors");
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  mcdl::emu::destroy_counted(pref, "cublasLt descriptors");
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                           cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                           size_t size) {
  if (!pref || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      if (size != sizeof(uint64_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&pref->max_workspace, buf, size);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      if (size != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&pref->min_alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, size);
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

namespace mcdl::emu::detail {
// The workspace the stand-in's algorithms ask for when allowed (as split-K algorithms do), so
// that a call passing less than the heuristic reported fails.
constexpr uint64_t lt_algo_workspace = uint64_t(1) << 20;
constexpr uint64_t lt_algo_tag = 0x4d43444c4c54ull;  // marks an algorithm the stand-in's heuristic chose

inline uint64_t pointer_alignment(const void* p) {  // largest power of two ≤ 256 dividing the address
  uint64_t alignment = 256;
  while (alignment > 1 && reinterpret_cast<uintptr_t>(p) % alignment != 0) alignment /= 2;
  return alignment;
}

// The checks shared by the heuristic and the matmul: op(A) is m×k, op(B) k×n, C and D m×n,
// and the types are a combination cuBLASLt computes.
inline cublasStatus_t check_lt_problem(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                       cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) {
  if (!desc || !a || !b || !c || !d) return CUBLAS_STATUS_INVALID_VALUE;
  const uint64_t m = d->rows, n = d->cols;
  const uint64_t a_rows = desc->transa == CUBLAS_OP_N ? a->rows : a->cols;
  const uint64_t k = desc->transa == CUBLAS_OP_N ? a->cols : a->rows;
  const uint64_t b_rows = desc->transb == CUBLAS_OP_N ? b->rows : b->cols;
  const uint64_t b_cols = desc->transb == CUBLAS_OP_N ? b->cols : b->rows;
  if (a_rows != m || b_rows != k || b_cols != n || c->rows != m || c->cols != n) return CUBLAS_STATUS_INVALID_VALUE;
  const bool types_ok =
      desc->compute == CUBLAS_COMPUTE_64F
          ? desc->scale == CUDA_R_64F && a->type == CUDA_R_64F && b->type == CUDA_R_64F && c->type == CUDA_R_64F &&
                d->type == CUDA_R_64F
          : desc->scale == CUDA_R_32F && a->type == b->type && c->type == d->type &&
                (d->type == CUDA_R_32F || (d->type == CUDA_R_16BF && a->type == CUDA_R_16BF)) &&
                ((desc->compute == CUBLAS_COMPUTE_32F && (a->type == CUDA_R_32F || a->type == CUDA_R_16BF)) ||
                 (desc->compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a->type == CUDA_R_32F));
  return types_ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

// What an algorithm is bound to: the problem it was chosen for.
inline void describe_lt_problem(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                cublasLtMatrixLayout_t d, uint64_t out[3]) {
  out[0] = (uint64_t(desc->compute) << 32) | (uint64_t(desc->transa) << 8) | uint64_t(desc->transb) |
           (uint64_t(desc->epilogue) << 16) | (uint64_t(a->type) << 24) | (uint64_t(d->type) << 56);
  out[1] = (d->rows << 32) | d->cols;
  out[2] = (desc->transa == CUBLAS_OP_N ? a->cols : a->rows) | (uint64_t(b->type) << 48);
}
}  // namespace mcdl::emu::detail

inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                     cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                                                     cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                                                     cublasLtMatmulPreference_t pref, int requested,
                                                     cublasLtMatmulHeuristicResult_t results[], int* returned) {
  using namespace mcdl::emu::detail;
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!pref || requested <= 0 || !results || !returned) return CUBLAS_STATUS_INVALID_VALUE;
  if (const cublasStatus_t status = check_lt_problem(desc, a_desc, b_desc, c_desc, d_desc);
      status != CUBLAS_STATUS_SUCCESS)
    return status;
  // One algorithm: it works at the alignments it was told of and at the bias pointer's.
  cublasLtMatmulHeuristicResult_t& result = results[0];
  std::memset(&result, 0, sizeof result);
  result.algo.data[0] = lt_algo_tag;
  describe_lt_problem(desc, a_desc, b_desc, d_desc, result.algo.data + 1);
  for (int i = 0; i < 4; ++i) result.algo.data[4] |= uint64_t(pref->min_alignment[i] & 0xffffu) << (16 * i);
  result.algo.data[5] = desc->bias ? pointer_alignment(desc->bias) : 256;
  result.workspaceSize = pref->max_workspace < lt_algo_workspace ? pref->max_workspace : lt_algo_workspace;
  result.algo.data[6] = result.workspaceSize;
  result.state = CUBLAS_STATUS_SUCCESS;
  result.wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                                     const void* A, cublasLtMatrixLayout_t a_desc, const void* B,
                                     cublasLtMatrixLayout_t b_desc, const void* beta, const void* C,
                                     cublasLtMatrixLayout_t c_desc, void* D, cublasLtMatrixLayout_t d_desc,
                                     const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                                     cudaStream_t stream) {
  using namespace mcdl::emu::detail;
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || !A || !B || !C || !D || !algo) return CUBLAS_STATUS_INVALID_VALUE;
  if (const cublasStatus_t status = check_lt_problem(desc, a_desc, b_desc, c_desc, d_desc);
      status != CUBLAS_STATUS_SUCCESS)
    return status;
  uint64_t problem[3];
  describe_lt_problem(desc, a_desc, b_desc, d_desc, problem);
  if (algo->data[0] != lt_algo_tag || std::memcmp(problem, algo->data + 1, sizeof problem) != 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  const void* buffers[4] = {A, B, C, D};
  for (int i = 0; i < 4; ++i)
    if (pointer_alignment(buffers[i]) < ((algo->data[4] >> (16 * i)) & 0xffffu)) return CUBLAS_STATUS_INVALID_VALUE;
  const bool gelu = desc->epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  const bool bias = desc->epilogue == CUBLASLT_EPILOGUE_BIAS || gelu;
  if (bias && (!desc->bias || pointer_alignment(desc->bias) < algo->data[5])) return CUBLAS_STATUS_INVALID_VALUE;
  if (workspace_bytes < algo->data[6] || (algo->data[6] > 0 && (!workspace || pointer_alignment(workspace) < 256)))
    return CUBLAS_STATUS_INVALID_VALUE;
  // In place (C = D) needs one layout for both.
  if (C == D && c_desc->ld != d_desc->ld) return CUBLAS_STATUS_INVALID_VALUE;
  const bool double_scale = desc->scale == CUDA_R_64F;
  const double a_scale = double_scale ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  const double b_scale = double_scale ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  if (!mcdl::emu::stream_usable(stream)) return CUBLAS_STATUS_NOT_SUPPORTED;
  // Queued on the stream (recorded when it is being captured) with the descriptors as they are now.
  mcdl::emu::on_stream(stream, [=, op = *desc, a = *a_desc, b = *b_desc, c = *c_desc, d = *d_desc] {
    const uint64_t k = op.transa == CUBLAS_OP_N ? a.cols : a.rows;
    column_major_gemm(op.transa == CUBLAS_OP_T, op.transb == CUBLAS_OP_T, int64_t(d.rows), int64_t(d.cols),
                      int64_t(k), a_scale, A, a.type, a.ld, B, b.type, b.ld, b_scale, C, c.type, c.ld, D, d.type,
                      d.ld, bias ? op.bias : nullptr, op.compute, gelu);
  });
  return CUBLAS_STATUS_SUCCESS;
}
