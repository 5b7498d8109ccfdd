#include "layers/block.h"

#include "engine/ops.h"

namespace mcdl {

Block::Block(int64_t dim, int64_t num_heads, int64_t mlp_hidden_dim, bool qkv_bias, double norm_eps, bool layer_scale)
    : norm1(dim, norm_eps), attn(dim, num_heads, qkv_bias), norm2(dim, norm_eps), mlp(dim, mlp_hidden_dim) {
  if (layer_scale) {
    ls1_gamma = new_parameter({dim});
    ls2_gamma = new_parameter({dim});
  }
}

// The skip connections ride in proj's and fc2's products (on a GPU, their epilogues: no pass of
// their own over the activations); with LayerScale the gains scale the branches first
// (Linear::forward).
Tensor Block::forward(const Tensor& x) const {
  Tensor h = attn.forward(norm1.forward(x), x, ls1_gamma);
  return mlp.forward(norm2.forward(h), h, ls2_gamma);
}

Tensor Block::forward_first_token(const Tensor& x) const {
  // The CLS token's first skip connection stays an addition of its own, after the branch: passed
  // into proj's product, its gradient reached x in another order against norm1's and moved the
  // last bits of a run that trains this block's input (fmnist-pairs). One row per image: no pass
  // worth saving.
  const Tensor branch = attn.forward_first_token(norm1.forward(x), ls1_gamma);
  Tensor h = slice(x, 1, 0, 1) + branch;
  return mlp.forward(norm2.forward(h), h, ls2_gamma);
}

Tensor Block::forward_bf16(const Tensor& x) const {
  // With LayerScale the gains ride in proj's and fc2's bf16 weights (undefined gains: none).
  Tensor h = attn.forward_bf16(norm1.forward_bf16(x), x, ls1_gamma);
  return mlp.forward_bf16(norm2.forward_bf16(h), h, ls2_gamma);
}

void Block::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  norm1.visit_parameters(prefix + "norm1.", visit);
  attn.visit_parameters(prefix + "attn.", visit);
  if (ls1_gamma.defined()) visit(prefix + "ls1.gamma", ls1_gamma, ParamInit::constant(1.0));
  norm2.visit_parameters(prefix + "norm2.", visit);
  mlp.visit_parameters(prefix + "mlp.", visit);
  if (ls2_gamma.defined()) visit(prefix + "ls2.gamma", ls2_gamma, ParamInit::constant(1.0));
}

}  // namespace mcdl
