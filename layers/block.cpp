#include "layers/block.h"

#include "engine/ops.h"

namespace mcdl {

Block::Block(int64_t dim, int64_t num_heads, int64_t mlp_hidden_dim, bool qkv_bias, double norm_eps)
    : norm1(dim, norm_eps), attn(dim, num_heads, qkv_bias), norm2(dim, norm_eps), mlp(dim, mlp_hidden_dim) {}

Tensor Block::forward(const Tensor& x) const {
  Tensor h = x + attn.forward(norm1.forward(x));
  return h + mlp.forward(norm2.forward(h));
}

Tensor Block::forward_first_token(const Tensor& x) const {
  Tensor h = slice(x, 1, 0, 1) + attn.forward_first_token(norm1.forward(x));
  return h + mlp.forward(norm2.forward(h));
}

Tensor Block::forward_bf16(const Tensor& x) const {
  Tensor h = attn.forward_bf16(norm1.forward_bf16(x), x);
  return mlp.forward_bf16(norm2.forward_bf16(h), h);
}

void Block::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  norm1.visit_parameters(prefix + "norm1.", visit);
  attn.visit_parameters(prefix + "attn.", visit);
  norm2.visit_parameters(prefix + "norm2.", visit);
  mlp.visit_parameters(prefix + "mlp.", visit);
}

}  // namespace mcdl
