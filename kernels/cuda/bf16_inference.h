// The frozen blocks' inference path in bf16 (the CUDA twins of kernels/cpu/bf16_inference.h):
// bf16 activations in and out, every reduction and formula in fp32, one rounding to bf16 per
// output element. Forward only. The products are in kernels/cuda/gemm.h (linear_bf16,
// gemm_bf16_pointers).
// Launches are queued on the engine stream. Plain C++: engine code includes it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/cuda/cudnn.h"

namespace mcdl::cuda {

// y = (x − mean)·rsqrt(var + eps)·gamma + beta over each row of d elements (biased variance).
void layer_norm_bf16(const bf16* x, const float* gamma, const float* beta, bf16* y, int64_t rows, int64_t d,
                     float eps);
// y = 0.5·x·(1 + erf(x/√2)), the exact form (PyTorch nn.GELU).
void gelu_bf16(const bf16* x, bf16* y, int64_t n);
// y = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (kernels/gelu_form.h's gelu_tanh), for
// linear_gelu_bf16's tanh form where cuBLASLt's epilogue cannot take it.
void gelu_tanh_bf16(const bf16* x, bf16* y, int64_t n);
// y = softmax(x) over each row of d elements; in place allowed (y = x).
void softmax_bf16(const bf16* x, bf16* y, int64_t rows, int64_t d);
// DINO's attention core: for each batch entry and head, softmax(scale·q·kᵀ)·v, with q, k and v
// read where they lie in the fused projection qkv [B, T, 3, H, hd] and the context written as
// [B, T, H, hd], the layout the output projection reads: no copies into per-head layouts.
// Fused: one kernel on the tensor cores, no T×T scores in memory; the roundings of the CPU
// reference (kernels/cpu/bf16_inference.h: fp32 scores and softmax, the softmax numerators
// rounded to bf16 for the product with v). Takes what attention_bf16_fuses accepts and throws
// std::invalid_argument otherwise.
void attention_bf16(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim,
                    float scale);
// head_dim 16, 32, 48 or 64 (the accumulators of a warp's 16 rows stay in registers) and both
// buffers 16-byte aligned.
bool attention_bf16_fuses(const bf16* qkv, const bf16* context, int64_t head_dim);
// The same in FlashAttention-2's arrangement on mma.sync (scores, softmax and numerators in
// registers; kernels/cuda/bf16_inference.cu), for what attention_bf16_fuses accepts: the same
// roundings as the fused kernel, with sums in another order.
void attention_bf16_flash(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                          int64_t head_dim, float scale);
// The same through cuDNN's fused scaled-dot-product attention (kernels/cuda/cudnn_attention.cu):
// its flash-attention engine, fp32 scores and softmax, the probabilities rounded to bf16 for the
// product with v. attention_bf16_cudnn_supported says whether cuDNN offers a plan for the shape
// (building and keeping it on first ask) and the buffers suit it (head size a multiple of 8,
// 16-byte aligned); where not, `why` says why (the library missing included).
// attention_bf16_cudnn throws std::invalid_argument with that reason. A batch runs as chunks with
// a plan each (cudnn_batch_chunks, kernels/cuda/cudnn.h).
bool attention_bf16_cudnn_supported(const bf16* qkv, const bf16* context, int64_t batch, int64_t tokens,
                                    int64_t heads, int64_t head_dim, std::string* why);
void attention_bf16_cudnn(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                          int64_t head_dim, float scale);
// Builds and finalizes attention_bf16_cudnn's operation graph for a shape, and nothing more: no
// handle, so no GPU (cuDNN 9.8 and later finalize a graph without one). Throws with cuDNN's reason
// when the loaded library refuses it. What a machine without a GPU can check of the real library;
// its heuristics and plans need the device.
void check_attention_bf16_cudnn_graph(int64_t batch, int64_t tokens, int64_t heads, int64_t head_dim);
// What the loaded cuDNN says of attention_bf16_cudnn's graph at that shape on the device that
// `device_properties` describes (kernels/cuda/cudnn.h). Throws where the library cannot describe
// a device (the emulated cuDNN cannot) or refuses the graph or the description.
CudnnEngineVerdicts attention_bf16_cudnn_engine_verdicts(int64_t batch, int64_t tokens, int64_t heads,
                                                         int64_t head_dim, const std::string& device_properties);
// The same unfused, for any head size: two batched cuBLAS products through pointer arrays with
// the softmax between them, the scaled scores rounded to bf16 into `scores` (B·H·T·T elements)
// and the probabilities normalised before their rounding.
void attention_bf16_unfused(const bf16* qkv, bf16* scores, bf16* context, int64_t batch, int64_t tokens,
                            int64_t heads, int64_t head_dim, float scale);
// y[r, c] += bias[c]: linear_bf16's bias where cuBLASLt's epilogue cannot take it.
void add_rows_bf16(bf16* y, const bf16* bias, int64_t rows, int64_t cols);

}  // namespace mcdl::cuda
