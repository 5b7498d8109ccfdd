#include "kernels/cuda/gemm.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>

#include "kernels/cuda/bf16_inference.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/device_resource.h"
#include "kernels/cuda/linalg.h"
#include "kernels/cuda/runtime.h"

#ifdef __CUDACC__
#include <cublasLt.h>
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

void report_if_failed(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) report_release_failure(what, cublasGetStatusString(status));
}

// The cuBLAS handle, bound to the engine stream. cublasDestroy also releases the workspace cuBLAS
// allocated for it.
void create_cublas(cublasHandle_t& handle) {
  const cudaStream_t stream = engine_stream();
  MCDL_CUBLAS_CHECK(cublasCreate(&handle));
  MCDL_CUBLAS_CHECK(cublasSetStream(handle, stream));
}
void destroy_cublas(cublasHandle_t& handle) {
  if (handle) report_if_failed(cublasDestroy(handle), "the cuBLAS handle");
}
DeviceResource<cublasHandle_t> cublas_resource(create_cublas, destroy_cublas);

cublasHandle_t cublas_handle() { return cublas_resource.get(); }

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

// ---- cuBLASLt: the product with the bias in its epilogue ----------------------------------

// cuBLASLt's scratch memory (split-K partial sums and the like): 32 MiB, NVIDIA's recommended
// workspace for Hopper (cublasSetWorkspace docs), as PyTorch uses there. Allocated once; only
// the engine stream uses it, and its order keeps two products from sharing it at once.
// cudaMallocAsync returns it 256-byte aligned, as cublasLtMatmul requires.
constexpr uint64_t lt_workspace_bytes = uint64_t(32) << 20;

// The largest power of two up to 256 that divides the address. cuBLASLt's heuristic assumes
// 256-byte aligned matrices unless told otherwise (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*), and
// views into a tensor may start anywhere.
uint32_t alignment_of(const void* pointer) {
  uint32_t alignment = 256;
  while (alignment > 1 && reinterpret_cast<uintptr_t>(pointer) % alignment != 0) alignment /= 2;
  return alignment;
}

// Everything the heuristic's choice depends on, in the engine's row-major terms: the problem
// and the alignment of every buffer (it reads the bias pointer's off the descriptor).
struct LtKey {
  cublasComputeType_t compute;
  cudaDataType type;      // of A and B
  cudaDataType out_type;  // of C, D and the bias
  bool trans_a, trans_b;
  int m, n, k, lda, ldb;
  uint32_t align_a, align_b, align_c, align_bias;
  uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;  // or CUBLASLT_EPILOGUE_GELU_BIAS: the bias, then GELU
  auto operator<=>(const LtKey&) const = default;
};

// The key of a product: its problem in cuBLAS's 32-bit terms and its buffers' alignments (C's
// given: C and D may be two buffers).
LtKey lt_key(cublasComputeType_t compute, cudaDataType type, cudaDataType out_type, bool trans_a, bool trans_b,
             int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, const void* a, const void* b, uint32_t align_c,
             const void* bias) {
  return LtKey{.compute = compute,
               .type = type,
               .out_type = out_type,
               .trans_a = trans_a,
               .trans_b = trans_b,
               .m = as_int(m, "m"),
               .n = as_int(n, "n"),
               .k = as_int(k, "k"),
               .lda = as_int(lda, "lda"),
               .ldb = as_int(ldb, "ldb"),
               .align_a = alignment_of(a),
               .align_b = alignment_of(b),
               .align_c = align_c,
               .align_bias = alignment_of(bias)};
}

template <auto destroy>
struct LtDestroy {
  template <class Handle>
  void operator()(Handle handle) const {
    destroy(handle);
  }
};
using LtDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDestroy<cublasLtMatmulDescDestroy>>;
using LtLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDestroy<cublasLtMatrixLayoutDestroy>>;
using LtPreference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDestroy<cublasLtMatmulPreferenceDestroy>>;

// A product cuBLASLt can run: its descriptors, in cuBLAS's column-major terms, and the
// heuristic's algorithm. Only the bias pointer changes from call to call.
struct LtPlan {
  LtDesc desc;
  LtLayout a, b, c;
  cublasLtMatmulAlgo_t algo;
};

// cuBLASLt's handle, its workspace, and the plans made with them (per key; nullopt: none).
struct LtState {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::mutex mutex;  // guards plans: the cached descriptor's bias pointer is shared state
  std::map<LtKey, std::optional<LtPlan>> plans;
};
void create_lt(LtState& state) {
  MCDL_CUBLAS_CHECK(cublasLtCreate(&state.handle));
  state.workspace = device_alloc(lt_workspace_bytes);
}
void destroy_lt(LtState& state) {
  state.plans.clear();  // their descriptors before the handle
  if (state.workspace) {
    try {
      device_free(state.workspace);
    } catch (const std::exception& error) {
      report_release_failure("the cuBLASLt workspace", error.what());
    }
  }
  if (state.handle) report_if_failed(cublasLtDestroy(state.handle), "the cuBLASLt handle");
}
DeviceResource<LtState> lt_resource(create_lt, destroy_lt);

LtLayout lt_layout(cudaDataType type, int rows, int cols, int ld) {
  cublasLtMatrixLayout_t layout;
  MCDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows),
                                               static_cast<uint64_t>(cols), ld));
  return LtLayout(layout);
}

// As in strided_batched: row-major C (m×n) = op(A)·op(B) is column-major Cᵀ (n×m) =
// op(B)ᵀ·op(A)ᵀ, so cuBLASLt's A is the engine's B and its B the engine's A. A layout describes
// the stored matrix, before the transpose the descriptor applies: the engine's B, stored k×n
// row-major (n×k column-major, ld = ldb), or n×k when transposed. The bias is per row of the
// column-major D, i.e. per column j of the engine's C. Empty when cuBLASLt offers no algorithm.
std::optional<LtPlan> make_lt_plan(cublasLtHandle_t handle, const LtKey& key, const void* bias) {
  LtPlan plan;
  cublasLtMatmulDesc_t desc;
  MCDL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, key.compute, key.type == CUDA_R_64F ? CUDA_R_64F : CUDA_R_32F));
  plan.desc.reset(desc);
  // The attribute types are cuBLASLt's: int32_t transposes, uint32_t epilogue, and the bias
  // attribute holds the pointer (buf is the pointer's address).
  const int32_t trans_a = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t epilogue = key.epilogue;
  MCDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  MCDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  MCDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  MCDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  plan.a = key.trans_b ? lt_layout(key.type, key.k, key.n, key.ldb) : lt_layout(key.type, key.n, key.k, key.ldb);
  plan.b = key.trans_a ? lt_layout(key.type, key.m, key.k, key.lda) : lt_layout(key.type, key.k, key.m, key.lda);
  plan.c = lt_layout(key.out_type, key.n, key.m, key.n);

  cublasLtMatmulPreference_t raw_preference;
  MCDL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_preference));
  const LtPreference preference(raw_preference);
  const uint64_t workspace_bytes = lt_workspace_bytes;
  MCDL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace_bytes, sizeof workspace_bytes));
  // cuBLASLt's A, B, C and D. D is given the lesser of its own and the bias's alignment, as
  // PyTorch's gemm_and_bias gives it the bias's: the epilogue handles both together.
  const uint32_t alignments[4] = {key.align_b, key.align_a, key.align_c, std::min(key.align_c, key.align_bias)};
  const cublasLtMatmulPreferenceAttributes_t alignment_attributes[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    MCDL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_preference, alignment_attributes[i], &alignments[i],
                                                           sizeof alignments[i]));

  cublasLtMatmulHeuristicResult_t result = {};
  int returned = 0;
  // An error here (cuBLASLt answers INVALID_VALUE for some degenerate shapes, per PyTorch's
  // addmm) means the same as no result: this product goes the unfused way.
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc, plan.a.get(), plan.b.get(),
                                                               plan.c.get(), plan.c.get(), raw_preference, 1, &result,
                                                               &returned);
  if (status != CUBLAS_STATUS_SUCCESS || returned == 0 || result.state != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  plan.algo = result.algo;
  return plan;
}

// Runs D = op(A)·op(B) + beta·C + bias through cuBLASLt if it has an algorithm for it (heuristics
// asked once per key, answers kept, "none" included); false when it has none. C and D share a
// layout; C is not read when beta = 0.
bool lt_gemm_bias(const LtKey& key, const void* a, const void* b, const void* bias, const void* c, void* d,
                  const void* one, const void* beta) {
  LtState& state = lt_resource.get();
  const std::lock_guard<std::mutex> lock(state.mutex);
  auto found = state.plans.find(key);
  if (found == state.plans.end()) found = state.plans.emplace(key, make_lt_plan(state.handle, key, bias)).first;
  if (!found->second) return false;
  const LtPlan& plan = *found->second;
  MCDL_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  MCDL_CUBLAS_CHECK(cublasLtMatmul(state.handle, plan.desc.get(), one, b, plan.a.get(), a, plan.b.get(), beta, c,
                                   plan.c.get(), d, plan.c.get(), &plan.algo, state.workspace, lt_workspace_bytes,
                                   engine_stream()));
  return true;
}

template <class In, class Out>
bool gemm_bias_impl(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const In* a, int64_t lda,
                    const In* b, int64_t ldb, const Out* bias, const Out* residual, Out* c, GemmMode mode,
                    cudaDataType type, cublasComputeType_t compute) {
  if (m == 0 || n == 0) return true;
  // PyTorch keeps products where the weight has a dimension of 1 (n or k here) off cuBLASLt
  // (its heuristic rejects some), and a bias below 16-byte alignment has been reported to fail
  // in the epilogue (Marian NMT); the engine's own parameters are 256-byte aligned anyway.
  if (n > 1 && k > 1 && alignment_of(bias) >= 16) {
    const uint32_t align_c = residual ? std::min(alignment_of(c), alignment_of(residual)) : alignment_of(c);
    const LtKey key = lt_key(compute, type, std::is_same_v<Out, double> ? CUDA_R_64F : CUDA_R_32F, trans_a, trans_b,
                             m, n, k, lda, ldb, a, b, align_c, bias);
    const Out one = 1, beta = residual ? 1 : 0;
    if (lt_gemm_bias(key, a, b, bias, residual ? residual : c, c, &one, &beta)) return true;
  }
  broadcast_rows(bias, c, m, n);
  if constexpr (std::is_same_v<In, bf16>) gemm(trans_a, trans_b, m, n, k, 1.0f, a, lda, 0, b, ldb, 0, 1.0f, c, n, 0, 1);
  else gemm(trans_a, trans_b, m, n, k, Out(1), a, lda, 0, b, ldb, 0, Out(1), c, n, 0, 1, mode);
  if (residual) accumulate(c, residual, m * n, false);
  return false;
}

// ---- GemmMode::bf16: float operands rounded to bf16 once, then the bf16 product --------------

// A float operand's bf16 copy in pool memory, freed in stream order (the product that reads it
// is queued before the free). Views keep their leading dimension and batch stride: the copy
// spans the operand from its first to its last element, gaps included.
class Bf16Operand {
 public:
  // op(X) is rows×cols; X is stored transposed when `trans`.
  Bf16Operand(const float* x, bool trans, int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch) {
    const int64_t stored_rows = trans ? cols : rows, stored_cols = trans ? rows : cols;
    const int64_t extent = (batch - 1) * stride + (stored_rows - 1) * ld + stored_cols;
    data_ = static_cast<bf16*>(device_alloc(static_cast<size_t>(extent) * sizeof(bf16)));
    convert(x, data_, extent);
  }
  ~Bf16Operand() { device_free(data_); }
  Bf16Operand(const Bf16Operand&) = delete;
  Bf16Operand& operator=(const Bf16Operand&) = delete;
  const bf16* get() const { return data_; }

 private:
  bf16* data_ = nullptr;
};

bool empty_product(int64_t m, int64_t n, int64_t k, int64_t batch) { return m == 0 || n == 0 || k == 0 || batch == 0; }

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
          int64_t stride_c, int64_t batch, GemmMode mode) {
  if (mode == GemmMode::bf16 && !empty_product(m, n, k, batch)) {
    const Bf16Operand a16(a, trans_a, m, k, lda, stride_a, batch), b16(b, trans_b, k, n, ldb, stride_b, batch);
    gemm(trans_a, trans_b, m, n, k, alpha, a16.get(), lda, stride_a, b16.get(), ldb, stride_b, beta, c, ldc, stride_c,
         batch);
    return;
  }
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

bool gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, const float* bias, const float* residual, float* c, GemmMode mode) {
  if (mode == GemmMode::bf16 && !empty_product(m, n, k, 1)) {
    const Bf16Operand a16(a, trans_a, m, k, lda, 0, 1), b16(b, trans_b, k, n, ldb, 0, 1);
    return gemm_bias_impl(trans_a, trans_b, m, n, k, a16.get(), lda, b16.get(), ldb, bias, residual, c, mode,
                          CUDA_R_16BF, CUBLAS_COMPUTE_32F);
  }
  return gemm_bias_impl(trans_a, trans_b, m, n, k, a, lda, b, ldb, bias, residual, c, mode, CUDA_R_32F,
                        mode == GemmMode::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
}

bool gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
               const double* b, int64_t ldb, const double* bias, const double* residual, double* c, GemmMode mode) {
  return gemm_bias_impl(trans_a, trans_b, m, n, k, a, lda, b, ldb, bias, residual, c, mode, CUDA_R_64F,
                        CUBLAS_COMPUTE_64F);
}

void gemm_bf16_pointers(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const bf16* const* a, int64_t lda, const bf16* const* b, int64_t ldb, bf16* const* c,
                        int64_t ldc, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  const float beta = 0;
  // As strided_batched: cuBLAS gets B before A, n before m.
  MCDL_CUBLAS_CHECK(cublasGemmBatchedEx(
      cublas_handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, as_int(n, "n"),
      as_int(m, "m"), as_int(k, "k"), &alpha, reinterpret_cast<const void* const*>(b), CUDA_R_16BF,
      as_int(ldb, "ldb"), reinterpret_cast<const void* const*>(a), CUDA_R_16BF, as_int(lda, "lda"), &beta,
      reinterpret_cast<void* const*>(c), CUDA_R_16BF, as_int(ldc, "ldc"), as_int(batch, "batch"), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
}

namespace {
// y = x·wᵀ + bias (+ residual), then GELU when `epilogue` is CUBLASLT_EPILOGUE_GELU_BIAS, through
// cuBLASLt; false when it has no algorithm (or the shapes or the bias's alignment keep the
// product off it, as gemm_bias_impl).
bool lt_linear_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                    const bf16* residual, bf16* y, uint32_t epilogue) {
  if (out <= 1 || in <= 1 || alignment_of(bias) < 16) return false;
  const float one = 1, beta = residual ? 1.0f : 0.0f;
  // As gemm_bias_impl: y = x·wᵀ is the engine's row-major C = A·Bᵀ with A = x, B = w.
  LtKey key = lt_key(CUBLAS_COMPUTE_32F, CUDA_R_16BF, CUDA_R_16BF, false, true, rows, out, in, in, in, x, w,
                     std::min(alignment_of(y), residual ? alignment_of(residual) : 256u), bias);
  key.epilogue = epilogue;
  return lt_gemm_bias(key, x, w, bias, residual ? residual : y, y, &one, &beta);
}
}  // namespace

void linear_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                 const bf16* residual, bf16* y) {
  if (rows == 0 || out == 0) return;
  if (lt_linear_bf16(rows, in, out, x, w, bias, residual, y, CUBLASLT_EPILOGUE_BIAS)) return;
  // No cuBLASLt algorithm: the residual (or nothing) plus the product, then the bias.
  const float one = 1, beta = residual ? 1.0f : 0.0f;
  if (residual && residual != y) copy_device_to_device(y, residual, static_cast<size_t>(rows * out) * sizeof(bf16));
  strided_batched(false, true, rows, out, in, &one, x, CUDA_R_16BF, in, 0, w, CUDA_R_16BF, in, 0, &beta, y,
                  CUDA_R_16BF, out, 0, 1, CUBLAS_COMPUTE_32F);
  add_rows_bf16(y, bias, rows, out);
}

void linear_gelu_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                      bf16* y, GeluForm form) {
  if (rows == 0 || out == 0) return;
  if (form == GeluForm::tanh && lt_linear_bf16(rows, in, out, x, w, bias, nullptr, y, CUBLASLT_EPILOGUE_GELU_BIAS))
    return;
  linear_bf16(rows, in, out, x, w, bias, nullptr, y);
  if (form == GeluForm::tanh) gelu_tanh_bf16(y, y, rows * out);
  else gelu_bf16(y, y, rows * out);
}

}  // namespace mcdl::cuda
