// Products with bf16 inputs and fp32 accumulation on the host, through oneDNN's matmul (Debian's
// libdnnl): OpenBLAS 0.3.21 as Debian builds it has no sbgemm. Where the processor has AVX512-BF16
// (or AMX) oneDNN runs them at about twice sgemm's speed (2.0–2.2× at ViT-B/16's shapes on the
// 2-core EPYC development machine); elsewhere it emulates them, slower than fp32.
// Row-major, as kernels/cpu/gemm.h; errors throw std::runtime_error.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"
#include "kernels/gelu_form.h"

namespace mcdl::cpu {

// Whether bf16 products run natively here (oneDNN's effective ISA has AVX512-BF16; the variable
// ONEDNN_MAX_CPU_ISA can lower it).
bool bf16_products_native();
// Whether oneDNN runs bf16 products here at all (Debian's oneDNN has bf16 matmul kernels for
// AVX-512 processors only: seen failing on an AVX2-only AMD EPYC). Probed once.
bool bf16_products_available();

// How many products so far ran on oneDNN's reference kernel (a layout its fast kernels do not
// take: orders of magnitude slower). The layouts this project passes avoid it; the tests check.
int64_t bf16_reference_products();

// C_i = alpha·op(A_i)·op(B_i) + beta·C_i for i < batch (beta = 0: C is not read), X_i = X + i·stride_x
// (stride 0: shared by every i; not for C). A and B bf16, C f32.
void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a, int64_t lda,
               int64_t stride_a, const bf16* b, int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
               int64_t stride_c, int64_t batch);

// The same on f32 operands, each rounded to bf16 once first (as PyTorch's autocast and the CUDA
// path's bf16 mode do).
void gemm_f32_as_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                      int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta,
                      float* c, int64_t ldc, int64_t stride_c, int64_t batch);

// y = x·wᵀ + bias (+ residual) with x [rows, in], w [out, in], bias [out] and residual [rows, out]
// (or null) bf16: summed in fp32 and rounded to bf16 once. residual may be y itself.
void linear_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                 const bf16* residual, bf16* y);
// y = GELU(x·wᵀ + bias), the GELU (`form`: exact erf or tanh approximation) of the fp32 sum inside
// the product (oneDNN's post-op), rounded to bf16 once: fc1 and its activation without a pass over
// the hidden units.
void linear_gelu_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                      bf16* y, GeluForm form);

}  // namespace mcdl::cpu
