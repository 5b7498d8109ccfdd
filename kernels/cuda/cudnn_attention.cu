// DINO's attention core through cuDNN's fused scaled-dot-product attention (its flash-attention
// engine), declared in kernels/cuda/bf16_inference.h.
//
// cuDNN 9 before 9.21 recognises the fused attention as a pattern of plain backend operations, the
// graph NVIDIA's cudnn-frontend builds for an inference SDPA node (its "composite" form):
//
//   S = Q·Kᵀ (fp32)   S' = S·scale   M = max over keys (S')   E = exp(S' − M)
//   Z = Σ over keys (E)   L = M + log Z (virtual)   P = E / Z (bf16)   O = P·V (bf16)
//
// L, the softmax statistics a training graph writes out, is computed into a virtual tensor that
// nothing reads: the frontend emits it for inference too, and cuDNN's pattern matcher requires it.
// Without it cuDNN 9.14 on an H200 and 9.19 told about an H100 without one (below) reject the
// graph in every engine ("Dropout set of ops not configured correctly").
//
// Q, K and V are read in place from the fused projection qkv [B, T, 3, H, hd] through strides, and
// O is written as [B, T, H, hd]. One execution plan per shape (kernels/cuda/cudnn_plans.h), built
// on first use and kept; the scale is a by-value scalar, so it is not part of the plan. A batch
// runs as chunks of the sizes plans are built for (cudnn_batch_chunks): the entries are
// independent.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/bf16_inference.h"
#include "kernels/cuda/cudnn_plans.h"

namespace mcdl::cuda {
namespace {

// The tensors' unique ids in the graph and the variant pack.
enum Uid : int64_t { q_uid = 1, k_uid, v_uid, o_uid, scale_uid };

constexpr int64_t alignment_bytes = 16;
constexpr const char* graph_name = "cuDNN attention";

// The SDPA graph of the header comment for a shape {batch, tokens, heads, head_dim}.
const BackendDescriptor& build_graph(CudnnGraph& g, const CudnnShape& shape, cudnnHandle_t handle) {
  const auto [b, t, h, hd] = shape;
  const int64_t d = h * hd;
  // [B, H, T, hd] views of qkv [B, T, 3, H, hd]; Kᵀ swaps the last two.
  const std::vector<int64_t> qkv_strides = {t * 3 * d, hd, 3 * d, 1};
  const auto& q = g.tensor(q_uid, CUDNN_DATA_BFLOAT16, {b, h, t, hd}, qkv_strides, alignment_bytes);
  const auto& k_t = g.tensor(k_uid, CUDNN_DATA_BFLOAT16, {b, h, hd, t}, {t * 3 * d, hd, 1, 3 * d}, alignment_bytes);
  const auto& v = g.tensor(v_uid, CUDNN_DATA_BFLOAT16, {b, h, t, hd}, qkv_strides, alignment_bytes);
  const auto& o = g.tensor(o_uid, CUDNN_DATA_BFLOAT16, {b, h, t, hd}, {t * d, hd, d, 1}, alignment_bytes);
  const auto& scale = g.tensor(scale_uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, alignment_bytes, false, true);

  const auto& scores = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, t}, alignment_bytes);
  g.matmul(q, k_t, scores);
  const auto& scaled = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, t}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_MUL, scores, &scale, scaled);
  const auto& row_max = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, 1}, alignment_bytes);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scaled, row_max);
  const auto& shifted = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, t}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_SUB, scaled, &row_max, shifted);
  const auto& numerators = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, t}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, numerators);
  const auto& row_sum = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, 1}, alignment_bytes);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, numerators, row_sum);
  const auto& log_sum = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, 1}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_LOG, row_sum, nullptr, log_sum);
  const auto& statistics = g.intermediate(CUDNN_DATA_FLOAT, {b, h, t, 1}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_ADD, row_max, &log_sum, statistics);
  const auto& probabilities = g.intermediate(CUDNN_DATA_BFLOAT16, {b, h, t, t}, alignment_bytes);
  g.pointwise(CUDNN_POINTWISE_DIV, numerators, &row_sum, probabilities);
  g.matmul(probabilities, v, o);
  return g.finalized_graph(handle);
}

std::string shape_text(const CudnnShape& shape) {
  const auto [batch, tokens, heads, head_dim] = shape;
  return "[B " + std::to_string(batch) + ", T " + std::to_string(tokens) + ", " + std::to_string(heads) +
         " heads of " + std::to_string(head_dim) + "]";
}

// The plan for the buffers and a shape {batch, tokens, heads, head_dim}, or null with `why` set.
const CudnnPlan* usable_plan(const bf16* qkv, const bf16* context, const CudnnShape& shape, std::string* why) {
  const auto [batch, tokens, heads, head_dim] = shape;
  if (batch < 1 || tokens < 1 || heads < 1 || head_dim < 8 || head_dim % 8 != 0 || !cudnn_aligned(qkv) ||
      !cudnn_aligned(context)) {
    if (why)
      *why = std::string(graph_name) + " at " + shape_text(shape) +
             ": needs a head size that is a multiple of 8 and 16-byte aligned buffers";
    return nullptr;
  }
  return cudnn_plan(graph_name, shape, build_graph, shape_text, why);
}

}  // namespace

void check_attention_bf16_cudnn_graph(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim) {
  CudnnGraph g;
  (void)build_graph(g, {batch, tokens, heads, head_dim}, nullptr);
}

CudnnEngineVerdicts attention_bf16_cudnn_engine_verdicts(int64_t batch, int64_t tokens, int64_t heads,
                                                         int64_t head_dim, const std::string& device_properties) {
  return cudnn_engine_verdicts(build_graph, {batch, tokens, heads, head_dim}, device_properties);
}

bool attention_bf16_cudnn_supported(const bf16* qkv, const bf16* context, int64_t batch, int64_t tokens,
                                    int64_t heads, int64_t head_dim, std::string* why) {
  for (const int64_t chunk : cudnn_batch_chunks(batch))
    if (!usable_plan(qkv, context, {chunk, tokens, heads, head_dim}, why)) return false;
  return true;
}

void attention_bf16_cudnn(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                          int64_t head_dim, float scale) {
  const int64_t d = heads * head_dim;
  int64_t first = 0;  // the chunk's first batch entry
  for (const int64_t chunk : cudnn_batch_chunks(batch)) {
    const bf16* chunk_qkv = qkv + first * tokens * 3 * d;
    bf16* chunk_context = context + first * tokens * d;
    std::string why;
    const CudnnPlan* plan = usable_plan(chunk_qkv, chunk_context, {chunk, tokens, heads, head_dim}, &why);
    if (!plan) throw std::invalid_argument(why);
    // Device pointers, and for the by-value scale a host pointer to its value.
    run_cudnn_plan(*plan, {q_uid, k_uid, v_uid, o_uid, scale_uid},
                   {const_cast<bf16*>(chunk_qkv), const_cast<bf16*>(chunk_qkv + d),
                    const_cast<bf16*>(chunk_qkv + 2 * d), chunk_context, &scale},
                   "cudnnBackendExecute (attention)");
    first += chunk;
  }
}

}  // namespace mcdl::cuda
