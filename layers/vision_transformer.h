// DINO's VisionTransformer (facebookresearch/dino vision_transformer.py) as the backbone:
// patch embedding → CLS token in front → + position embedding (interpolated for other input
// sizes) → pre-norm blocks → final LayerNorm → the CLS token, [B, D].
//
// Parameter names and order = DINO's state_dict():
//   cls_token                      [1, 1, D]
//   pos_embed                      [1, 1 + N, D]
//   patch_embed.proj.weight        [D, C, P, P]
//   patch_embed.proj.bias          [D]
//   blocks.{i}.norm1.weight/bias   [D]
//   blocks.{i}.attn.qkv.weight     [3D, D]  rows [0, D) = Q, [D, 2D) = K, [2D, 3D) = V;
//                                           head h owns rows h·hd..(h+1)·hd−1 of each
//   blocks.{i}.attn.qkv.bias       [3D]     (only with qkv_bias)
//   blocks.{i}.attn.proj.weight    [D, D], .bias [D]
//   blocks.{i}.norm2.weight/bias   [D]
//   blocks.{i}.mlp.fc1.weight      [M, D], .bias [M]
//   blocks.{i}.mlp.fc2.weight      [D, M], .bias [D]
//   norm.weight/bias               [D]
// DINOv2 (facebookresearch/dinov2 DinoVisionTransformer) adds, by configuration:
//   register_tokens                [1, R, D]   (num_registers R > 0; after pos_embed)
//   blocks.{i}.ls1.gamma           [D]         (layer_scale; after attn.proj)
//   blocks.{i}.ls2.gamma           [D]         (layer_scale; after mlp.fc2)
// and pos_embed holds the grid of pos_img_size (DINOv2: 37x37 for 518 px), interpolated to the
// input. Tokens are [CLS + pos[0], registers, patches + pos[1:]]: registers get no position
// embedding; they take part in attention but are not part of the feature (the CLS token).
// Initialisation (Module::initialize) follows DINO: trunc_normal(0.02) for cls_token,
// pos_embed and every Linear weight, register_tokens at trunc_normal(1e-6) (DINOv2's normal, std
// 1e-6), the LayerScale gains at 1 (DINOv2's hub value), zero Linear biases, LayerNorm 1 / 0, the patch conv at
// PyTorch's default U(±1/√(C·P·P)) for weight and bias.
//
// Freezing (GCD / SimGCD): set_grad_from_block(b) trains blocks.{i}.* for i ≥ b only;
// patch_embed, cls_token, pos_embed, register_tokens, blocks below b and the final norm are frozen. Everything
// before the first trainable block runs under NoGradGuard when nothing there needs a gradient
// (no graph is recorded for frozen blocks).
#pragma once
#include <memory>
#include <vector>

#include "layers/block.h"
#include "layers/frozen_graphs.h"
#include "layers/layer_norm.h"
#include "layers/patch_embed.h"
#include "layers/pos_embed.h"
#include "layers/vit_config.h"

namespace mcdl {

class VisionTransformer : public Module {
 public:
  // Allocates every parameter on the CPU in f32, uninitialised: call initialize(seed) or
  // load_parameters() next. (Listing names and shapes needs neither.) Every parameter starts
  // with requires_grad set, as in PyTorch.
  explicit VisionTransformer(const VitConfig& config);

  const VitConfig& config() const { return config_; }

  // images [B, C, H, W] (H, W multiples of the patch size) → the CLS token after the final
  // norm, [B, D]. The last block runs only for the CLS token (Block::forward_first_token).
  Tensor forward(const Tensor& images);
  // Every token after the final norm, [B, 1 + R + N, D] (R registers), with full blocks
  // throughout (the reference for forward()).
  Tensor forward_tokens(const Tensor& images);
  // forward() in two parts, for callers that reuse the frozen part (the evaluation cache: the
  // frozen blocks and the test transform are deterministic, so their output never changes):
  // frozen_depth() = the leading blocks with no trainable parameter (at most depth − 1);
  // forward_frozen(images) = the tokens after them, [B, 1 + R + N, D], with no graph when nothing
  // there trains; forward_from_frozen(tokens) = the remaining blocks, final norm, CLS [B, D].
  // forward_from_frozen(forward_frozen(x)) == forward(x) exactly. With EngineSettings::cuda_graphs
  // = frozen, forward_frozen replays a CUDA graph per input shape (layers/frozen_graphs.h), the
  // same bits; frozen_graphs() says how often it recorded and replayed.
  const FrozenGraphs& frozen_graphs() const { return *frozen_graphs_; }
  int64_t frozen_depth();
  Tensor forward_frozen(const Tensor& images);
  Tensor forward_from_frozen(const Tensor& tokens);
  // Patch tokens with the CLS token in front, plus the position embedding, then the register
  // tokens after CLS: [B, 1 + R + N, D].
  Tensor prepare_tokens(const Tensor& images);

  // Freezing rule of GCD / SimGCD (see above); grad_from_block ≥ depth freezes the backbone.
  void set_grad_from_block(int64_t grad_from_block);

  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Tensor cls_token, pos_embed;
  Tensor register_tokens;  // [1, R, D]; undefined without registers
  PatchEmbed patch_embed;
  std::vector<Block> blocks;
  LayerNorm norm;

 private:
  // Runs prepare_tokens and blocks [0, end), under NoGradGuard when nothing there needs a
  // gradient (then, in bf16 matmul precision, on bf16 activations: Block::forward_bf16); `end` =
  // the first block with a trainable parameter, at most `limit`.
  Tensor run_frozen_prefix(const Tensor& images, size_t limit, size_t& end);
  // Whether the tokens before the first block need a gradient (then nothing runs under NoGradGuard).
  bool prefix_needs_grad(const Tensor& images);

  VitConfig config_;
  PosEmbedResizer resize_pos_embed_;
  // forward_frozen's CUDA graphs (EngineSettings::cuda_graphs). Copies of the model share them:
  // a graph is replayed only for the parameter storages it was recorded with.
  std::shared_ptr<FrozenGraphs> frozen_graphs_;
};

}  // namespace mcdl
