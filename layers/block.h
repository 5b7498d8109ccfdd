// DINO's pre-norm transformer Block: x + attn(norm1(x)), then x + mlp(norm2(x)) (drop path
// and dropouts are 0 in the hub model). With layer_scale (DINOv2's LayerScale) each branch is
// scaled by a learned [dim] gain first: x + ls1.gamma·attn(norm1(x)), then
// x + ls2.gamma·mlp(norm2(x)); the gains start at 1, as in DINOv2's hub backbones.
#pragma once
#include "layers/attention.h"
#include "layers/layer_norm.h"
#include "layers/mlp.h"

namespace mcdl {

class Block : public Module {
 public:
  Block(int64_t dim, int64_t num_heads, int64_t mlp_hidden_dim, bool qkv_bias, double norm_eps,
        bool layer_scale = false);

  // x [B, T, D] → [B, T, D].
  Tensor forward(const Tensor& x) const;
  // The block's output for token 0 (the CLS token) alone, [B, 1, D]: keys and values for all
  // tokens, the query, attention output, projection and MLP for token 0 only. The same numbers
  // as forward(x)[:, 0:1] at a fraction of the cost (the last block, when only CLS is used).
  Tensor forward_first_token(const Tensor& x) const;
  // forward() of a frozen block on bf16 activations [B, T, D] (engine/ops/inference.h), the
  // residual adds fused into the projections; with LayerScale the gains are folded into proj's and
  // fc2's bf16 weights and biases (gain·W, gain·b), so they too cost no pass of their own.
  Tensor forward_bf16(const Tensor& x) const;

  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  LayerNorm norm1;
  Attention attn;
  LayerNorm norm2;
  Mlp mlp;
  Tensor ls1_gamma, ls2_gamma;  // [dim] with layer_scale, undefined otherwise
};

}  // namespace mcdl
