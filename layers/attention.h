// Multi-head self-attention with DINO's fused qkv projection (vision_transformer.py
// Attention): qkv.weight [3D, D] holds the query rows 0..D−1, the key rows D..2D−1 and the
// value rows 2D..3D−1; inside each, head h owns rows h·hd..(h+1)·hd−1 (hd = D / heads).
// attention = softmax(q·kᵀ · hd^−½) · v per head, heads concatenated, then proj.
#pragma once
#include "layers/linear.h"

namespace mcdl {

class Attention : public Module {
 public:
  Attention(int64_t dim, int64_t num_heads, bool qkv_bias);

  // x [B, T, D] → [B, T, D]; residual + forward(x) when `residual` is defined (added in proj's
  // product), residual + gain ⊙ forward(x) with `gain` (LayerScale; Linear::forward).
  Tensor forward(const Tensor& x, const Tensor& residual = Tensor(), const Tensor& gain = Tensor()) const;
  // The output for token 0 alone, [B, 1, D]: keys and values for all T tokens, the query of
  // token 0 only. Equal to forward(x)[:, 0:1] (each output row depends only on its own query);
  // with `gain` (LayerScale), gain ⊙ that. No residual: Block adds the CLS token's skip connection
  // itself (block.cpp says why).
  Tensor forward_first_token(const Tensor& x, const Tensor& gain = Tensor()) const;
  // residual + forward(x) on bf16 activations, no graph (the residual added in proj's product); with
  // `gain` (LayerScale), residual + gain ⊙ forward(x), the gain folded into proj's bf16 weights.
  Tensor forward_bf16(const Tensor& x, const Tensor& residual, const Tensor& gain = Tensor()) const;

  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Linear qkv, proj;

 private:
  // softmax(q·kᵀ·scale)·v for q [B, H, Tq, hd], k and v [B, H, T, hd], then heads merged
  // back into [B, Tq, D] and projected (proj.forward with `residual` and `gain`).
  Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& residual, const Tensor& gain) const;

  int64_t dim_, num_heads_, head_dim_;
  double scale_;
};

}  // namespace mcdl
