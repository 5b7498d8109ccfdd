// Gradient checks of small models composed from the primitives: the pieces each pass their
// own check, these catch mistakes in how gradients flow between ops (fan-out, views).
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ops.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed) { return random_tensor(shape, seed).set_requires_grad(true); }

// Multi-head self-attention on x [B, T, D] with a fused qkv projection, as in a ViT block.
Tensor attention(const Tensor& x, const Tensor& qkv_weight, const Tensor& qkv_bias, const Tensor& proj_weight,
                 int64_t heads) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2), head_dim = d / heads;
  Tensor qkv = reshape(linear(x, qkv_weight, qkv_bias), {b, t, 3, heads, head_dim});
  qkv = permute(qkv, {2, 0, 3, 1, 4});  // [3, B, H, T, hd]
  Tensor q = reshape(slice(qkv, 0, 0, 1), {b, heads, t, head_dim});
  Tensor k = reshape(slice(qkv, 0, 1, 2), {b, heads, t, head_dim});
  Tensor v = reshape(slice(qkv, 0, 2, 3), {b, heads, t, head_dim});
  Tensor scores = matmul(q, transpose(k, -1, -2)) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  Tensor context = matmul(softmax(scores), v);                       // [B, H, T, hd]
  context = reshape(permute(context, {0, 2, 1, 3}), {b, t, d});
  return linear(context, proj_weight);
}
}  // namespace

TEST_CASE("composite: multi-head attention from primitives (T = 5, d = 8, 2 heads)") {
  check_op("attention", [](auto& in) { return attention(in[0], in[1], in[2], in[3], 2); },
           {leaf({2, 5, 8}, 1), leaf({24, 8}, 2), leaf({24}, 3), leaf({8, 8}, 4)});
}

TEST_CASE("composite: pre-norm residual block with GELU MLP and a cross-entropy head") {
  auto block = [](auto& in) {
    Tensor h = in[0] + linear(gelu(layer_norm(in[0], in[1], in[2], 1e-6)), in[3], in[4]);
    Tensor logits = linear(l2_normalize(h), in[5]) * 10.0;
    return cross_entropy(logits, from_vector<int64_t>({0, 2, 1, 2}, {4}));
  };
  check_op("block", block,
           {leaf({4, 6}, 5), leaf({6}, 6), leaf({6}, 7), leaf({6, 6}, 8), leaf({6}, 9), leaf({3, 6}, 10)});
}
