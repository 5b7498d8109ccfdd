#include "layers/vision_transformer.h"

#include <optional>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/settings.h"
#include "layers/pos_embed.h"

namespace mcdl {
namespace {
const VitConfig& validated(const VitConfig& config) {
  config.validate();
  return config;
}
}  // namespace

VisionTransformer::VisionTransformer(const VitConfig& config)
    : cls_token(new_parameter({1, 1, validated(config).embed_dim})),
      pos_embed(new_parameter({1, 1 + config.pos_grid_size() * config.pos_grid_size(), config.embed_dim})),
      patch_embed(config.in_chans, config.embed_dim, config.patch_size),
      norm(config.embed_dim, config.norm_eps),
      config_(config),
      frozen_graphs_(std::make_shared<FrozenGraphs>()) {
  if (config.num_registers > 0) register_tokens = new_parameter({1, config.num_registers, config.embed_dim});
  blocks.reserve(static_cast<size_t>(config.depth));
  for (int64_t i = 0; i < config.depth; ++i)
    blocks.emplace_back(config.embed_dim, config.num_heads, config.mlp_hidden_dim(), config.qkv_bias, config.norm_eps,
                        config.layer_scale);
}

Tensor VisionTransformer::prepare_tokens(const Tensor& images) {
  Tensor patches = patch_embed.forward(images);  // [B, N, D]
  const int64_t b = patches.size(0);
  // cls_token.expand(B, -1, -1): one kernel (B copies of it were B kernel launches per forward).
  const int64_t d = cls_token.size(2);
  Tensor tokens = concat({expand(cls_token, {b, 1, d}), patches}, 1);
  tokens = tokens + resize_pos_embed_(pos_embed, images.size(2), images.size(3), config_.patch_size);
  if (!register_tokens.defined()) return tokens;
  return concat({slice(tokens, 1, 0, 1), expand(register_tokens, {b, register_tokens.size(1), d}),
                 slice(tokens, 1, 1, tokens.size(1))},
                1);
}

bool VisionTransformer::prefix_needs_grad(const Tensor& images) {
  return images.requires_grad() || cls_token.requires_grad() || pos_embed.requires_grad() ||
         (register_tokens.defined() && register_tokens.requires_grad()) || patch_embed.any_trainable();
}

Tensor VisionTransformer::run_frozen_prefix(const Tensor& images, size_t limit, size_t& end) {
  end = 0;
  while (end < limit && !blocks[end].any_trainable()) ++end;
  const bool needs_grad = prefix_needs_grad(images);
  std::optional<NoGradGuard> no_grad;
  if (!needs_grad) no_grad.emplace();
  Tensor x = prepare_tokens(images);
  // With bf16 products (PyTorch's autocast), the frozen blocks keep their activations in bf16 too:
  // half the memory traffic, the residual adds inside the products; the trained part gets f32 back.
  if (!needs_grad && end > 0 && x.dtype() == DType::f32 &&
      engine_settings().matmul_precision == MatmulPrecision::bf16) {
    Tensor h = x.to(DType::bf16);
    for (size_t i = 0; i < end; ++i) h = blocks[i].forward_bf16(h);
    return h.to(DType::f32);
  }
  for (size_t i = 0; i < end; ++i) x = blocks[i].forward(x);
  return x;
}

Tensor VisionTransformer::forward(const Tensor& images) { return forward_from_frozen(forward_frozen(images)); }

int64_t VisionTransformer::frozen_depth() {
  size_t end = 0;
  while (end + 1 < blocks.size() && !blocks[end].any_trainable()) ++end;
  return static_cast<int64_t>(end);
}

Tensor VisionTransformer::forward_frozen(const Tensor& images) {
  const auto eager = [this](const Tensor& x) {
    size_t end = 0;
    return run_frozen_prefix(x, blocks.size() - 1, end);
  };
  if (engine_settings().cuda_graphs == CudaGraphs::off || !images.device().is_cuda() || prefix_needs_grad(images))
    return eager(images);
  // What the prefix reads: the token parameters, the patch embedding and the frozen blocks.
  std::vector<Tensor> frozen{cls_token, pos_embed};
  if (register_tokens.defined()) frozen.push_back(register_tokens);
  const ParameterVisitor collect = [&](const std::string&, Tensor& p, const ParamInit&) { frozen.push_back(p); };
  patch_embed.visit_parameters("", collect);
  for (int64_t i = 0; i < frozen_depth(); ++i) blocks[static_cast<size_t>(i)].visit_parameters("", collect);
  return frozen_graphs_->run(images, frozen, eager);
}

Tensor VisionTransformer::forward_from_frozen(const Tensor& tokens) {
  Tensor x = tokens;
  for (size_t next = static_cast<size_t>(frozen_depth()); next + 1 < blocks.size(); ++next) x = blocks[next].forward(x);
  Tensor cls = blocks.back().forward_first_token(x);  // [B, 1, D]
  return reshape(norm.forward(cls), {cls.size(0), cls.size(2)});
}

Tensor VisionTransformer::forward_tokens(const Tensor& images) {
  size_t next = 0;
  Tensor x = run_frozen_prefix(images, blocks.size(), next);
  for (; next < blocks.size(); ++next) x = blocks[next].forward(x);
  return norm.forward(x);
}

void VisionTransformer::set_grad_from_block(int64_t grad_from_block) {
  check(grad_from_block >= 0, "set_grad_from_block: block index must be >= 0, got ", grad_from_block);
  set_requires_grad(false);
  for (size_t i = 0; i < blocks.size(); ++i)
    if (static_cast<int64_t>(i) >= grad_from_block) blocks[i].set_requires_grad(true);
}

void VisionTransformer::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  visit(prefix + "cls_token", cls_token, ParamInit::trunc_normal(0.02));
  visit(prefix + "pos_embed", pos_embed, ParamInit::trunc_normal(0.02));
  if (register_tokens.defined()) visit(prefix + "register_tokens", register_tokens, ParamInit::trunc_normal(1e-6));
  patch_embed.visit_parameters(prefix + "patch_embed.", visit);
  for (size_t i = 0; i < blocks.size(); ++i)
    blocks[i].visit_parameters(prefix + "blocks." + std::to_string(i) + ".", visit);
  norm.visit_parameters(prefix + "norm.", visit);
}

}  // namespace mcdl
