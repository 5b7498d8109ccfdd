// DINOv2's additions to the ViT (layers/vision_transformer.h): the named models, LayerScale,
// register tokens, the position embedding stored at another grid, their gradients (double
// precision) and the frozen blocks' bf16 path with LayerScale. Parity with PyTorch is in
// test_dinov2_parity.cpp.
#include <doctest/doctest.h>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "layers/pos_embed.h"
#include "layers/vision_transformer.h"
#include "tests/bf16_support.h"
#include "tests/gradcheck.h"
#include "tests/layers/vit_test_util.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// Every parameter at random values (LayerNorm gains near 1), in f64 on the CPU.
void randomize(Module& module, uint64_t seed) {
  std::map<std::string, Tensor> values;
  for (const NamedParameter& p : module.named_parameters()) {
    Tensor value = random_tensor(p.tensor.shape(), seed++, -0.5, 0.5);
    if (p.name.ends_with("norm1.weight") || p.name.ends_with("norm2.weight") || p.name == "norm.weight")
      value = value + 1.0;
    values[p.name] = value;
  }
  module.to(DType::f64);
  module.load_parameters(values);
}

// A model small enough for finite differences: a 3x3 stored grid (pos_img 21, patch 7), two
// registers, LayerScale, two blocks (the last one runs as the cheap CLS-only block).
VitConfig tiny_dinov2() {
  return parse_model_config(
             "img=14,patch=7,chans=1,dim=8,depth=2,heads=2,mlp_ratio=2,layer_scale=true,registers=2,"
             "pos_img=21")
      .backbone;
}

}  // namespace

TEST_CASE("dinov2 config: the named models are DINOv2's hub backbones") {
  const VitConfig b = parse_model_config("vit_base_patch14_dinov2").backbone;
  CHECK(b.patch_size == 14);
  CHECK(b.img_size == 224);
  CHECK(b.embed_dim == 768);
  CHECK(b.num_heads == 12);
  CHECK(b.depth == 12);
  CHECK(b.mlp_hidden_dim() == 3072);
  CHECK(b.norm_eps == 1e-6);
  CHECK(b.qkv_bias);
  CHECK(b.layer_scale);
  CHECK(b.num_registers == 0);
  CHECK(b.pos_grid_size() == 37);
  CHECK(parse_model_config("vit_base_patch14_dinov2_reg4").backbone.num_registers == 4);
  const VitConfig s = parse_model_config("vit_small_patch14_dinov2_reg4,img=280").backbone;
  CHECK(s.embed_dim == 384);
  CHECK(s.num_heads == 6);
  CHECK(s.num_registers == 4);
  CHECK(s.img_size == 280);
  CHECK(s.grid_size() == 20);
  CHECK(s.pos_grid_size() == 37);

  // dinov2_vitb14 has 86,580,480 parameters, mask_token (768, unused for features) included.
  CHECK(VisionTransformer(b).parameter_count() == 86580480 - 768);
  CHECK(VisionTransformer(parse_model_config("vit_base_patch14_dinov2_reg4").backbone).parameter_count() ==
        86580480 - 768 + 4 * 768);
  // dinov2_vits14: 22,056,576 with mask_token (384).
  CHECK(VisionTransformer(parse_model_config("vit_small_patch14_dinov2").backbone).parameter_count() == 22056576 - 384);
}

TEST_CASE("dinov2 config: names in the official order, and spec and JSON errors") {
  VisionTransformer vit(tiny_dinov2());
  const auto params = vit.named_parameters();
  REQUIRE(params.size() == 5 + 14 * 2 + 2);
  CHECK(params[1].name == "pos_embed");
  CHECK(params[1].tensor.shape() == Shape{1, 10, 8});  // the stored 3x3 grid
  CHECK(params[2].name == "register_tokens");
  CHECK(params[2].tensor.shape() == Shape{1, 2, 8});
  CHECK(params[5 + 6].name == "blocks.0.ls1.gamma");
  CHECK(params[5 + 13].name == "blocks.0.ls2.gamma");
  CHECK(params[5 + 13].tensor.shape() == Shape{8});

  CHECK_THROWS_WITH(parse_model_config("registers=-1"), doctest::Contains("bad value '-1' for 'registers'"));
  CHECK_THROWS_WITH(parse_model_config("layer_scale=yes"), doctest::Contains("bad value 'yes' for 'layer_scale'"));
  CHECK_THROWS_WITH(parse_model_config("vit_base_patch14_dinov2,pos_img=520"),
                    doctest::Contains("position embedding's image size 520 must be 0 (= img) or a multiple of the "
                                      "patch size 14"));
  CHECK_THROWS_WITH(parse_model_config("vit_base_patch14_dinov2_reg8"),
                    doctest::Contains("known: vit_base_patch16, vit_small_patch14_dinov2"));

  // The DINOv2 fields travel in the JSON; DINO's JSON stays as it was (no new fields).
  for (const char* spec : {"vit_base_patch14_dinov2", "vit_small_patch14_dinov2_reg4,img=280"}) {
    const ModelConfig config = parse_model_config(spec);
    CHECK(model_config_from_json(model_config_to_json(config)) == config);
  }
  const std::string dino = model_config_to_json(parse_model_config("vit_base_patch16"));
  CHECK(dino.find("layer_scale") == std::string::npos);
  CHECK(dino.find("registers") == std::string::npos);
  CHECK(dino.find("pos_img") == std::string::npos);
  std::string bad = model_config_to_json(parse_model_config("vit_base_patch14_dinov2_reg4"));
  bad.replace(bad.find("\"num_registers\":4"), 17, "\"num_registers\":true");
  CHECK_THROWS_WITH(model_config_from_json(bad), doctest::Contains("backbone.num_registers must be an integer"));
}

TEST_CASE("dinov2 model: registers follow CLS without position embedding; LayerScale scales each branch") {
  VisionTransformer vit(tiny_dinov2());
  randomize(vit, 10);
  Tensor images = random_tensor({2, 1, 14, 21}, 3);
  Tensor tokens = vit.prepare_tokens(images);
  REQUIRE(tokens.shape() == Shape{2, 1 + 2 + 6, 8});
  // A 2x3 grid from the stored 3x3 one.
  Tensor pos = interpolate_pos_encoding(vit.pos_embed, 14, 21, 7);
  Tensor patches = vit.patch_embed.forward(images);
  for (int64_t b = 0; b < 2; ++b) {
    Tensor row = slice(tokens, 0, b, b + 1);
    CHECK(max_abs_diff(slice(row, 1, 0, 1), vit.cls_token + slice(pos, 1, 0, 1)) < 1e-15);
    CHECK(max_abs_diff(slice(row, 1, 1, 3), vit.register_tokens) == 0);
    CHECK(max_abs_diff(slice(row, 1, 3, 9), slice(patches, 0, b, b + 1) + slice(pos, 1, 1, 7)) < 1e-15);
  }
  CHECK(vit.forward_tokens(images).shape() == Shape{2, 9, 8});
  CHECK(vit.forward(images).shape() == Shape{2, 8});

  // Gains of 1: the block without LayerScale; gains of 0: the identity.
  Block scaled(8, 2, 16, true, 1e-6, true), plain(8, 2, 16, true, 1e-6, false);
  randomize(plain, 40);
  std::map<std::string, Tensor> values = plain.state_dict();
  values["ls1.gamma"] = from_vector(std::vector<double>(8, 1.0), {8});
  values["ls2.gamma"] = from_vector(std::vector<double>(8, 1.0), {8});
  scaled.to(DType::f64);
  scaled.load_parameters(values);
  Tensor x = random_tensor({2, 5, 8}, 7);
  CHECK(max_abs_diff(scaled.forward(x), plain.forward(x)) == 0);
  values["ls1.gamma"] = from_vector(std::vector<double>(8, 0.0), {8});
  values["ls2.gamma"] = from_vector(std::vector<double>(8, 0.0), {8});
  scaled.load_parameters(values);
  CHECK(max_abs_diff(scaled.forward(x), x) == 0);
  CHECK(max_abs_diff(scaled.forward_first_token(x), slice(x, 1, 0, 1)) == 0);
}

TEST_CASE(
    "dinov2 model: gradients of every parameter and the image, in double (LayerScale, registers, interpolation)") {
  VisionTransformer vit(tiny_dinov2());
  randomize(vit, 20);
  std::vector<std::string> names;
  std::vector<Tensor> inputs = {random_tensor({2, 1, 14, 21}, 5).set_requires_grad(true)};
  for (const NamedParameter& p : vit.named_parameters()) {
    names.push_back(p.name);
    inputs.push_back(p.tensor.detach().clone().set_requires_grad(true));
  }
  // The parameters are the checked inputs: put the handles into the model on every call.
  auto features = [&](const std::vector<Tensor>& in) {
    size_t next = 1;
    vit.visit_parameters("", [&](const std::string&, Tensor& parameter, const ParamInit&) { parameter = in[next++]; });
    return vit.forward(in[0]);
  };
  check_op("dinov2 features (CLS, cheap last block)", features, inputs, 1e-6, 1e-4, 1e-4);
  auto tokens = [&](const std::vector<Tensor>& in) {
    size_t next = 1;
    vit.visit_parameters("", [&](const std::string&, Tensor& parameter, const ParamInit&) { parameter = in[next++]; });
    return vit.forward_tokens(in[0]);
  };
  check_gradients("dinov2 tokens (registers included)", tokens, inputs);

  // The interpolation alone, downsampling 3x3 -> 2x2 and 3x3 -> 2x3.
  Tensor pos = random_tensor({1, 10, 4}, 8).set_requires_grad(true);
  for (const auto& [h, w] : {std::pair<int64_t, int64_t>{14, 14}, {14, 21}}) {
    check_op("interpolate_pos_encoding " + std::to_string(h) + "x" + std::to_string(w),
             [h, w](const std::vector<Tensor>& in) { return interpolate_pos_encoding(in[0], h, w, 7); }, {pos});
  }
}

TEST_CASE("dinov2 model: the bf16 path of a frozen LayerScale block follows its f32 forward") {
  std::vector<Device> devices = {Device::cuda()};
  if (cpu_runs_bf16_products()) devices.push_back(Device::cpu());
  for (Device device : devices) {
    Block block(32, 4, 64, true, 1e-6, true);
    randomize(block, 60);
    block.to(DType::f32);
    block.to(device);
    block.set_requires_grad(false);
    Tensor x = random_tensor({2, 9, 32}, 9, -1, 1, DType::f32).to(device);
    NoGradGuard no_grad;
    Tensor reference = block.forward(x);
    Tensor bf16 = block.forward_bf16(x.to(DType::bf16)).to(DType::f32);
    check_close_scaled("LayerScale block in bf16 on " + device.str(), bf16, reference, 3e-2, 3e-2);
  }
}

TEST_CASE("dinov2 model: the resized table of a frozen pos_embed is kept until pos_embed or the size changes") {
  VisionTransformer vit(tiny_dinov2());
  randomize(vit, 30);
  vit.set_grad_from_block(1);  // pos_embed frozen
  PosEmbedResizer resize;
  const Tensor first = resize(vit.pos_embed, 14, 14, 7);
  CHECK(resize(vit.pos_embed, 14, 14, 7).impl() == first.impl());  // kept
  CHECK(max_abs_diff(first, interpolate_pos_encoding(vit.pos_embed, 14, 14, 7)) == 0);
  const Tensor wide = resize(vit.pos_embed, 14, 21, 7);  // another size: resized again
  CHECK(wide.shape() == Shape{1, 7, 8});
  CHECK(resize(vit.pos_embed, 21, 21, 7).impl() == vit.pos_embed.impl());  // the stored grid: the table itself
  const Tensor again = resize(vit.pos_embed, 14, 14, 7);
  std::map<std::string, Tensor> values = vit.state_dict();
  values["pos_embed"] = values["pos_embed"] * 2.0;
  vit.load_parameters(values);  // written: resized again, to the new values
  const Tensor reloaded = resize(vit.pos_embed, 14, 14, 7);
  CHECK(reloaded.impl() != again.impl());
  CHECK(max_abs_diff(reloaded, again * 2.0) < 1e-15);
  // A trainable table goes through the graph on every call.
  vit.pos_embed.set_requires_grad(true);
  const Tensor in_graph = resize(vit.pos_embed, 14, 14, 7);
  CHECK(in_graph.requires_grad());
  CHECK(resize(vit.pos_embed, 14, 14, 7).impl() != in_graph.impl());
}

TEST_CASE("dinov2 model: forward_from_frozen(forward_frozen(x)) is forward(x) with registers (the evaluation cache)") {
  VisionTransformer vit(tiny_dinov2());
  randomize(vit, 50);
  vit.set_grad_from_block(1);
  Tensor images = random_tensor({2, 1, 14, 14}, 4);
  Tensor tokens = vit.forward_frozen(images);
  CHECK(tokens.shape() == Shape{2, 1 + 2 + 4, 8});
  CHECK(max_abs_diff(vit.forward_from_frozen(tokens).detach(), vit.forward(images).detach()) == 0);
}
