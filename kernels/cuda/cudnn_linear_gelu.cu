// fc1's product with its bias and DINO's exact GELU as one cuDNN graph (cuDNN's fused matmul,
// whose Hopper kernels it compiles at run time), declared in kernels/cuda/gemm.h:
//
//   S = x·wᵀ (fp32)   S' = S + bias (fp32)   y = 0.5·S'·(1 + erf(S'/√2)) (GELU_FWD, rounded to bf16)
//
// cuBLASLt's GELU epilogue is the tanh approximation; this computes the erf form on the fp32 sums
// in the product's epilogue, so the hidden units are written once, rounded once, and not read
// again by a GELU pass. x [rows, in] and y [rows, out] row-major, w [out, in] read as its
// transpose through strides. One plan per row count (kernels/cuda/cudnn_plans.h); a batch of
// entries of `tokens` rows each runs as chunks of entries (cudnn_batch_chunks).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cudnn_plans.h"
#include "kernels/cuda/gemm.h"

namespace mcdl::cuda {
namespace {

// The tensors' unique ids in the graph and the variant pack.
enum Uid : int64_t { x_uid = 1, w_uid, bias_uid, y_uid };

constexpr int64_t alignment_bytes = 16;
constexpr const char* graph_name = "cuDNN linear + GELU";

// The graph of the header comment for a shape {rows, in, out, 0}.
const BackendDescriptor& build_graph(CudnnGraph& g, const CudnnShape& shape, cudnnHandle_t handle) {
  const auto [m, k, n, unused] = shape;
  const auto& x = g.tensor(x_uid, CUDNN_DATA_BFLOAT16, {1, m, k}, {m * k, k, 1}, alignment_bytes);
  const auto& w_t = g.tensor(w_uid, CUDNN_DATA_BFLOAT16, {1, k, n}, {k * n, 1, k}, alignment_bytes);
  const auto& bias = g.tensor(bias_uid, CUDNN_DATA_BFLOAT16, {1, 1, n}, {n, n, 1}, alignment_bytes);
  const auto& y = g.tensor(y_uid, CUDNN_DATA_BFLOAT16, {1, m, n}, {m * n, n, 1}, alignment_bytes);
  const auto& sums = g.intermediate(CUDNN_DATA_FLOAT, {1, m, n}, alignment_bytes);
  g.matmul(x, w_t, sums);
  const auto& biased = g.intermediate(CUDNN_DATA_FLOAT, {1, m, n}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_ADD, sums, &bias, biased);
  g.pointwise(CUDNN_POINTWISE_GELU_FWD, biased, nullptr, y);
  return g.finalized_graph(handle);
}

std::string shape_text(const CudnnShape& shape) {
  std::string text = "[";  // appended, not "[" + ...: GCC 12 warns falsely on inserting before a temporary
  text += std::to_string(shape[0]) + " rows, " + std::to_string(shape[1]) + " in, " + std::to_string(shape[2]) +
          " out]";
  return text;
}

// The plan for the buffers and the shape, or null with `why` set.
const CudnnPlan* usable_plan(const bf16* x, const bf16* w, const bf16* bias, const bf16* y, const CudnnShape& shape,
                             std::string* why) {
  const auto [rows, in, out, unused] = shape;
  if (rows < 1 || in < 8 || out < 8 || in % 8 != 0 || out % 8 != 0 ||
      !cudnn_aligned(x) || !cudnn_aligned(w) || !cudnn_aligned(bias) || !cudnn_aligned(y)) {
    if (why)
      *why = std::string(graph_name) + " at " + shape_text(shape) +
             ": needs input and output sizes that are multiples of 8 and 16-byte aligned buffers";
    return nullptr;
  }
  return cudnn_plan(graph_name, shape, build_graph, shape_text, why);
}

}  // namespace

void check_linear_gelu_bf16_cudnn_graph(int64_t rows, int64_t in, int64_t out) {
  CudnnGraph g;
  (void)build_graph(g, {rows, in, out, 0}, nullptr);
}

CudnnEngineVerdicts linear_gelu_bf16_cudnn_engine_verdicts(int64_t rows, int64_t in, int64_t out,
                                                           const std::string& device_properties) {
  return cudnn_engine_verdicts(build_graph, {rows, in, out, 0}, device_properties);
}

bool linear_gelu_bf16_cudnn_supported(const bf16* x, const bf16* w, const bf16* bias, const bf16* y, int64_t batch,
                                      int64_t tokens, int64_t in, int64_t out, std::string* why) {
  for (const int64_t chunk : cudnn_batch_chunks(batch))
    if (!usable_plan(x, w, bias, y, {chunk * tokens, in, out, 0}, why)) return false;
  return true;
}

void linear_gelu_bf16_cudnn(int64_t batch, int64_t tokens, int64_t in, int64_t out, const bf16* x, const bf16* w,
                            const bf16* bias, bf16* y) {
  int64_t first = 0;  // the chunk's first row
  for (const int64_t chunk : cudnn_batch_chunks(batch)) {
    const int64_t rows = chunk * tokens;
    const bf16* chunk_x = x + first * in;
    bf16* chunk_y = y + first * out;
    std::string why;
    const CudnnPlan* plan = usable_plan(chunk_x, w, bias, chunk_y, {rows, in, out, 0}, &why);
    if (!plan) throw std::invalid_argument(why);
    run_cudnn_plan(*plan, {x_uid, w_uid, bias_uid, y_uid},
                   {const_cast<bf16*>(chunk_x), const_cast<bf16*>(w), const_cast<bf16*>(bias), chunk_y},
                   "cudnnBackendExecute (linear + GELU)");
    first += rows;
  }
}

}  // namespace mcdl::cuda
