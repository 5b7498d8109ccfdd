// Forward-only bf16 ops: the frozen blocks' path when the matmul precision is bf16
// (VisionTransformer). Activations are bf16 in and out; parameters stay f32 and are rounded to
// bf16 where they enter a product (as PyTorch's autocast does; a layer keeps the rounded copy,
// Bf16Copy), LayerNorm's gamma and beta are used in fp32; every reduction and formula runs in
// fp32 and each output element is rounded once.
// No graph is recorded: an input that requires a gradient is an error (frozen blocks only).
#pragma once
#include <cstdint>
#include <memory>

#include "engine/tensor.h"

namespace mcdl {

// x [..., D] bf16, gamma and beta f32 [D].
Tensor bf16_layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);
// x [..., in] bf16 · weightᵀ ([out, in]) + bias ([out], or undefined for none) (+ residual
// bf16 [..., out], added in the product's epilogue) → bf16 [..., out]. The weight and bias are
// f32 (rounded to bf16 on each call) or already bf16 (Bf16Copy).
Tensor bf16_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual = Tensor());
Tensor bf16_gelu(const Tensor& x);
// bf16_gelu(bf16_linear(x, weight, bias)) as one op, for an MLP's first layer, the GELU as
// engine_settings().bf16_gelu says (erf by default, the tanh approximation, or erf through cuDNN):
// on the CPU the GELU runs on the product's fp32 sums inside oneDNN's matmul and the result is
// rounded once (no pass of its own over the hidden units); on a CUDA device erf takes the two
// kernels, tanh cuBLASLt's GELU epilogue, cudnn cuDNN's fused matmul (chunked by x's first
// dimensions, T = x.size(-2) rows each; erf's two kernels where cuDNN offers no plan).
Tensor bf16_linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias);

// A parameter rounded to bf16 once and kept, for the frozen blocks' products: rounding ViT-B/16's
// 85 M frozen weights on every forward reads 340 MB and writes 170 MB. The copy is made again
// when the source (or the gain) is another tensor, or when a writable pointer to its storage was
// handed out since (Storage::writes: an optimizer step, a load, an initialisation).
class Bf16Copy {
 public:
  // The bf16 copy of `source` (f32; without a gain, a bf16 tensor is returned as it is). With
  // `gain`, of gain·source: the f32 gain [source.size(0)] scales each row of a weight [out, in] or
  // each element of a bias [out] (in f32, rounded once), DINOv2's LayerScale folded into a frozen
  // product: residual + gain ⊙ (x·Wᵀ + b) = residual + x·(gain·W)ᵀ + gain·b.
  const Tensor& of(const Tensor& source, const Tensor& gain = Tensor());

 private:
  // What the kept copy was made from: a tensor's storage (not kept alive by the copy), offset,
  // shape and write count; `none` for no tensor.
  struct Origin {
    bool none = true;
    std::weak_ptr<Storage> storage;
    int64_t offset = 0;
    Shape shape;
    uint64_t writes = 0;
    static Origin of(const Tensor& t);
    bool same(const Tensor& t) const;
  };
  Origin source_, gain_;
  Tensor copy_;
};
// DINO's attention core on its fused projection qkv [B, T, 3·D] (split into q, k, v and heads as
// Attention::forward does): softmax(q·kᵀ/√(D/heads))·v with the heads merged back, [B, T, D].
// The scores and the softmax in fp32, the softmax numerators rounded to bf16 for the product
// with v. On a CUDA device it follows engine_settings().attention (engine/settings.h).
Tensor bf16_attention(const Tensor& qkv, int64_t num_heads);

}  // namespace mcdl
