#include "layers/attention.h"

#include <cmath>

#include "engine/ops.h"

namespace mcdl {
namespace {
int64_t checked_head_dim(int64_t dim, int64_t num_heads) {
  check(num_heads > 0 && dim % num_heads == 0, "Attention: dim ", dim, " is not divisible by ", num_heads, " heads");
  return dim / num_heads;
}
}  // namespace

Attention::Attention(int64_t dim, int64_t num_heads, bool qkv_bias)
    : qkv(dim, 3 * dim, qkv_bias, ParamInit::trunc_normal(0.02)),
      proj(dim, dim, true, ParamInit::trunc_normal(0.02)),
      dim_(dim),
      num_heads_(num_heads),
      head_dim_(checked_head_dim(dim, num_heads)),
      scale_(1.0 / std::sqrt(static_cast<double>(head_dim_))) {}

Tensor Attention::attend(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& residual,
                         const Tensor& gain) const {
  const int64_t b = q.size(0), tq = q.size(2);
  // PyTorch: attn = (q @ k.transpose(-2, -1)) * scale, softmax over keys, then attn @ v. The scale
  // rides in the product (1/√64 and 1/√16 are powers of two: the same bits as a multiplication).
  Tensor weights = softmax(matmul_transposed(q, k, scale_));
  Tensor context = permute(matmul(weights, v), {0, 2, 1, 3});  // [B, Tq, H, hd]
  return proj.forward(reshape(context, {b, tq, dim_}), residual, gain);
}

Tensor Attention::forward(const Tensor& x, const Tensor& residual, const Tensor& gain) const {
  check(x.dim() == 3 && x.size(2) == dim_, "Attention: expected x [B, T, ", dim_, "], got ", x.str());
  const int64_t b = x.size(0), t = x.size(1);
  // [B, T, 3, H, hd] → [3, B, H, T, hd]; slices along axis 0 are views.
  Tensor qkv_heads = permute(reshape(qkv.forward(x), {b, t, 3, num_heads_, head_dim_}), {2, 0, 3, 1, 4});
  const Shape per_head{b, num_heads_, t, head_dim_};
  return attend(reshape(slice(qkv_heads, 0, 0, 1), per_head), reshape(slice(qkv_heads, 0, 1, 2), per_head),
                reshape(slice(qkv_heads, 0, 2, 3), per_head), residual, gain);
}

Tensor Attention::forward_first_token(const Tensor& x, const Tensor& gain) const {
  check(x.dim() == 3 && x.size(2) == dim_, "Attention: expected x [B, T, ", dim_, "], got ", x.str());
  const int64_t b = x.size(0), t = x.size(1);
  // Row blocks of the fused weight (views along axis 0): Q = rows [0, D), K and V = [D, 3D).
  Tensor q_bias = qkv.bias.defined() ? slice(qkv.bias, 0, 0, dim_) : Tensor();
  Tensor kv_bias = qkv.bias.defined() ? slice(qkv.bias, 0, dim_, 3 * dim_) : Tensor();
  Tensor kv = linear(x, slice(qkv.weight, 0, dim_, 3 * dim_), kv_bias);  // [B, T, 2D]
  Tensor kv_heads = permute(reshape(kv, {b, t, 2, num_heads_, head_dim_}), {2, 0, 3, 1, 4});
  Tensor q = linear(slice(x, 1, 0, 1), slice(qkv.weight, 0, 0, dim_), q_bias);  // [B, 1, D]
  Tensor q_heads = permute(reshape(q, {b, 1, num_heads_, head_dim_}), {0, 2, 1, 3});
  const Shape per_head{b, num_heads_, t, head_dim_};
  return attend(q_heads, reshape(slice(kv_heads, 0, 0, 1), per_head), reshape(slice(kv_heads, 0, 1, 2), per_head),
                Tensor(), gain);
}

Tensor Attention::forward_bf16(const Tensor& x, const Tensor& residual, const Tensor& gain) const {
  check(x.dim() == 3 && x.size(2) == dim_, "Attention: expected x [B, T, ", dim_, "], got ", x.str());
  return proj.forward_bf16(bf16_attention(qkv.forward_bf16(x), num_heads_), residual, gain);
}

void Attention::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  qkv.visit_parameters(prefix + "qkv.", visit);
  proj.visit_parameters(prefix + "proj.", visit);
}

}  // namespace mcdl
