// Matrix products on the device through cuBLAS, in the engine's row-major convention
// (the translation to cuBLAS's column-major is inside). Plain C++: engine code includes it.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/bf16.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/gelu_form.h"
#include "kernels/gemm_mode.h"

namespace mcdl::cuda {

// How float products are computed (kernels/gemm_mode.h); bf16 inputs take the overload below,
// with fp32 accumulation.
using mcdl::GemmMode;

// For i in [0, batch): C_i = alpha·op(A_i)·op(B_i) + beta·C_i, row-major, op(X) = X or Xᵀ,
// op(A_i) is m×k, op(B_i) is k×n; X_i = X + i·stride_x (stride 0 = shared by every i; C's
// stride must not be 0 when batch > 1).
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
          int64_t stride_c, int64_t batch, GemmMode mode);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          int64_t stride_a, const double* b, int64_t ldb, int64_t stride_b, double beta, double* c, int64_t ldc,
          int64_t stride_c, int64_t batch, GemmMode mode);
// bf16 storage for A and B, fp32 accumulation and output.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a, int64_t lda,
          int64_t stride_a, const bf16* b, int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
          int64_t stride_c, int64_t batch);

// bf16 operands and bf16 output, fp32 accumulation, C overwritten (beta = 0), for i < batch:
// C_i = alpha·op(A_i)·op(B_i) with a[i], b[i], c[i] device arrays of the batch entries' matrices
// (cuBLAS's pointer-array form: the attention heads, which no single stride reaches).
void gemm_bf16_pointers(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const bf16* const* a, int64_t lda, const bf16* const* b, int64_t ldb, bf16* const* c,
                        int64_t ldc, int64_t batch);
// y [rows, out] = x [rows, in]·wᵀ (w [out, in]) + bias (+ residual [rows, out] where not null), bf16
// throughout, fp32 accumulation and one rounding: cuBLASLt's bias epilogue with the residual as
// its C (beta = 1), so a block's residual add costs no pass of its own.
void linear_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                 const bf16* residual, bf16* y);
// y = GELU(x·wᵀ + bias), the GELU in the form `form`. erf: linear_bf16, then gelu_bf16 in place
// (cuBLASLt's GELU epilogue is the tanh approximation, not DINO's erf, so the product is rounded
// to bf16 before the GELU; the CPU rounds once, inside oneDNN's product). tanh: cuBLASLt's GELU
// epilogue on the fp32 sums, one rounding and no pass of its own; where cuBLASLt has no algorithm,
// the product then a tanh GELU kernel.
void linear_gelu_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                      bf16* y, GeluForm form);
// The same with the erf form inside the product, through cuDNN's fused matmul
// (kernels/cuda/cudnn_linear_gelu.cu): fp32 accumulation, the bias and the GELU on the fp32 sums,
// one rounding to bf16. x holds `batch` entries of `tokens` rows each and runs as chunks of
// entries with a plan each (cudnn_batch_chunks, kernels/cuda/cudnn.h).
// linear_gelu_bf16_cudnn_supported says whether cuDNN offers a plan for the shape (building and
// keeping it on first ask) and the buffers suit it (in and out multiples of 8, 16-byte aligned);
// where not, `why` says why (the library missing included). linear_gelu_bf16_cudnn throws
// std::invalid_argument with that reason.
bool linear_gelu_bf16_cudnn_supported(const bf16* x, const bf16* w, const bf16* bias, const bf16* y, int64_t batch,
                                      int64_t tokens, int64_t in, int64_t out, std::string* why);
void linear_gelu_bf16_cudnn(int64_t batch, int64_t tokens, int64_t in, int64_t out, const bf16* x, const bf16* w,
                            const bf16* bias, bf16* y);
// Builds and finalizes that graph for `rows` rows without a GPU (cuDNN 9.8 and later); throws with
// cuDNN's reason when the loaded library refuses it.
void check_linear_gelu_bf16_cudnn_graph(int64_t rows, int64_t in, int64_t out);
// What the loaded cuDNN says of that graph on the device `device_properties` describes
// (kernels/cuda/cudnn.h); throws where it cannot say (the emulated cuDNN describes no device).
CudnnEngineVerdicts linear_gelu_bf16_cudnn_engine_verdicts(int64_t rows, int64_t in, int64_t out,
                                                           const std::string& device_properties);

// One product with a bias: C = op(A)·op(B) + bias (+ residual), bias[j] added to column j of
// every row (a linear layer's output features), C and the residual (or nullptr) contiguous m×n,
// op(A) m×k, op(B) k×n. cuBLASLt adds the bias, and the residual as its C at beta = 1, in the
// GEMM's epilogue, so C is written once and never read. Where cuBLASLt is not used (its
// heuristic offers no algorithm, n or k is 1, or the bias is not 16-byte aligned), the bias is
// broadcast into C, the product accumulated onto it (gemm above, beta = 1) and the residual
// added after. Returns true when the bias (and residual) were fused into the GEMM.
bool gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, const float* bias, const float* residual, float* c, GemmMode mode);
bool gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
               const double* b, int64_t ldb, const double* bias, const double* residual, double* c, GemmMode mode);

}  // namespace mcdl::cuda
