// The frozen blocks' bf16 attention on Hopper's warpgroup products (kernels/cuda/attention_wgmma.cu):
// the fused kernels' contract (kernels/cuda/bf16_inference.h: qkv [B, T, 3, H, hd] in, context
// [B, T, H, hd] out, fp32 scores and softmax, bf16 numerators) for head size 64 and at most 512
// tokens, on a compute capability 9.0 device. Plain C++: engine code includes it.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/bf16.h"

namespace mcdl::cuda {

inline constexpr int64_t wgmma_attention_max_tokens = 512;

// Whether attention_bf16_wgmma takes the call; where not, `why` says why.
bool attention_bf16_wgmma_supported(const bf16* qkv, const bf16* context, int64_t tokens, int64_t head_dim,
                                    std::string* why);
// Throws std::invalid_argument with that reason where it does not.
void attention_bf16_wgmma(const bf16* qkv, bf16* context, int64_t batch, int64_t tokens, int64_t heads,
                          int64_t head_dim, float scale);

}  // namespace mcdl::cuda
