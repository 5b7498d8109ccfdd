// The ViT's building blocks beyond PyTorch parity: the cheap last block (CLS-only queries,
// attention output, projection and MLP) equals the full block, forward and gradients; freezing
// records no graph for frozen blocks; position-embedding interpolation edge cases.
#include <doctest/doctest.h>

#include <set>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "layers/pos_embed.h"
#include "layers/simgcd_model.h"
#include "tests/gradcheck.h"
#include "tests/layers/vit_test_util.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// Block outputs and the gradients of <out, G> with respect to x and every block parameter.
struct BlockRun {
  Tensor out, dx;
  std::vector<Tensor> grads;
};

BlockRun run_block(Block& block, const Tensor& x_value, bool first_token_only, const Tensor& projection) {
  block.zero_grad();
  Tensor x = x_value.detach().clone().set_requires_grad(true);
  Tensor out = first_token_only ? block.forward_first_token(x) : slice(block.forward(x), 1, 0, 1);
  sum(out * projection).backward();
  BlockRun run{out, x.grad(), {}};
  for (const NamedParameter& p : block.named_parameters()) run.grads.push_back(p.tensor.grad());
  return run;
}

void check_cheap_block(Device device, DType dtype, bool qkv_bias, double rtol, double atol_scale) {
  Block block(16, 4, 40, qkv_bias, 1e-6);
  // Non-default LayerNorm and bias values, and weights large enough for sharp attention.
  std::map<std::string, Tensor> values;
  uint64_t seed = 100;
  for (const NamedParameter& p : block.named_parameters()) {
    const double range = p.tensor.dim() == 2 ? 0.6 : 0.3;
    Tensor value = random_tensor(p.tensor.shape(), seed++, -range, range);
    if (p.name.ends_with("norm1.weight") || p.name.ends_with("norm2.weight")) value = value + 1.0;
    values[p.name] = value;
  }
  block.load_parameters(values);
  block.to(dtype);
  block.to(device);
  Tensor x = random_tensor({3, 7, 16}, 5, -2, 2).to(dtype).to(device);
  Tensor projection = random_tensor({3, 1, 16}, 6).to(dtype).to(device);

  BlockRun full = run_block(block, x, false, projection), cheap = run_block(block, x, true, projection);
  const std::string where = device.str() + (dtype == DType::f64 ? " f64" : " f32");
  check_close_scaled("cheap block output, " + where, cheap.out, full.out, rtol, atol_scale);
  check_close_scaled("cheap block dx, " + where, cheap.dx, full.dx, rtol, atol_scale);
  const auto params = block.named_parameters();
  REQUIRE(cheap.grads.size() == full.grads.size());
  for (size_t i = 0; i < params.size(); ++i)
    check_close_scaled("cheap block d" + params[i].name + ", " + where, cheap.grads[i], full.grads[i], rtol,
                       atol_scale);
}

// The op names of every node reachable from `root`'s grad_fn.
std::multiset<std::string> graph_ops(const Tensor& root) {
  std::multiset<std::string> ops;
  std::vector<std::shared_ptr<Node>> stack;
  std::set<Node*> seen;
  if (root.grad_fn()) stack.push_back(root.grad_fn());
  while (!stack.empty()) {
    std::shared_ptr<Node> node = stack.back();
    stack.pop_back();
    if (!seen.insert(node.get()).second) continue;
    ops.insert(node->op_name);
    for (const Edge& e : node->inputs)
      if (e.node) stack.push_back(e.node);
  }
  return ops;
}

SimGCDModel fixture_model() {
  SimGCDModel model(vit_fixture().config);
  model.load_parameters(vit_fixture().weights);
  return model;
}

}  // namespace

TEST_CASE("vit blocks: the cheap last block equals the full block (forward and gradients)") {
  check_cheap_block(Device::cpu(), DType::f64, true, 1e-12, 1e-12);
  check_cheap_block(Device::cpu(), DType::f32, true, 1e-5, 1e-5);
  check_cheap_block(Device::cpu(), DType::f64, false, 1e-12, 1e-12);
  check_cheap_block(Device::cuda(), DType::f32, true, 1e-5, 1e-5);
}

TEST_CASE("vit blocks: forward (cheap last block) equals forward_tokens' CLS token, with gradients") {
  for (Device device : {Device::cpu(), Device::cuda()}) {
    SimGCDModel model = fixture_model();
    model.set_grad_from_block(0);  // every block trains: gradients reach all of them
    model.to(device);
    Tensor images = vit_fixture().reference.at("images_32").to(device);
    Tensor projection = random_tensor({2, 48}, 3, -1, 1, DType::f32).to(device);

    auto grads_of = [&](const Tensor& features) {
      model.zero_grad();
      sum(features * projection).backward();
      std::vector<Tensor> grads;
      for (const NamedParameter& p : model.backbone.trainable_parameters()) grads.push_back(p.tensor.grad());
      return grads;
    };
    Tensor full = reshape(slice(model.backbone.forward_tokens(images), 1, 0, 1), {2, 48});
    Tensor full_values = full.detach();
    std::vector<Tensor> full_grads = grads_of(full);
    Tensor cheap = model.backbone.forward(images);
    std::vector<Tensor> cheap_grads = grads_of(cheap);

    check_close_scaled("CLS feature on " + device.str(), cheap, full_values);
    const auto params = model.backbone.trainable_parameters();
    REQUIRE(params.size() == 24);
    for (size_t i = 0; i < params.size(); ++i)
      check_close_scaled("d" + params[i].name + " on " + device.str(), cheap_grads[i], full_grads[i]);
  }
}

TEST_CASE("vit blocks: frozen blocks record no graph and get no gradient") {
  SimGCDModel model = fixture_model();
  Tensor images = vit_fixture().reference.at("images_32");

  SUBCASE("grad_from_block = 1: only block 1, the final norm and the head are in the graph") {
    model.set_grad_from_block(1);
    Tensor features = model.backbone.forward(images);
    const auto ops = graph_ops(features);
    CHECK(ops.count("conv2d_patch") == 0);
    CHECK(ops.count("layer_norm") == 3);  // blocks.1.norm1, blocks.1.norm2, norm
    CHECK(ops.count("gelu") == 1);        // blocks.1.mlp only
    HeadOutput out = model.head.forward(features);
    sum(out.projection).backward();
    for (const NamedParameter& p : model.named_parameters()) {
      INFO(p.name);
      const bool trains =
          p.name.starts_with("blocks.1.") || (p.name.starts_with("head.") && !p.name.ends_with("weight_g"));
      CHECK(p.tensor.requires_grad() == trains);
      if (!trains) CHECK_FALSE(p.tensor.grad().defined());
    }
  }
  SUBCASE("grad_from_block = depth: the backbone records nothing") {
    model.set_grad_from_block(2);
    Tensor features = model.backbone.forward(images);
    CHECK_FALSE(features.requires_grad());
    CHECK(features.grad_fn() == nullptr);
    CHECK(model.trainable_parameters().size() == 7);  // the head without weight_g
  }
  SUBCASE("an input that needs a gradient keeps the frozen prefix in the graph") {
    model.set_grad_from_block(1);
    Tensor x = images.clone().set_requires_grad(true);
    const auto ops = graph_ops(model.backbone.forward(x));
    CHECK(ops.count("conv2d_patch") == 1);
    CHECK(ops.count("layer_norm") == 5);
  }
  SUBCASE("a negative block index is refused") {
    CHECK_THROWS_WITH(model.set_grad_from_block(-1),
                      doctest::Contains("set_grad_from_block: block index must be >= 0"));
  }
}

TEST_CASE("vit blocks: forward_from_frozen(forward_frozen(x)) is forward(x), bit for bit (the evaluation cache)") {
  SimGCDModel model = fixture_model();
  const Tensor images = vit_fixture().reference.at("images_32");
  for (int64_t from : {0, 1, 2}) {
    INFO("grad_from_block ", from);
    model.set_grad_from_block(from);
    CHECK(model.backbone.frozen_depth() == std::min<int64_t>(from, 1));  // at most depth - 1 = 1
    const Tensor tokens = model.backbone.forward_frozen(images);
    CHECK(tokens.shape() == Shape{images.size(0), 1 + 16, 48});
    CHECK_FALSE(tokens.requires_grad());  // patch_embed, cls_token and pos_embed never train here
    const std::vector<float> split = model.backbone.forward_from_frozen(tokens).to_vector<float>();
    CHECK(split == model.backbone.forward(images).to_vector<float>());
  }
}

TEST_CASE("vit blocks: position-embedding interpolation edge cases") {
  Tensor pos = random_tensor({1, 17, 6}, 8, -1, 1, DType::f32);

  SUBCASE("identity at the pretraining grid for square inputs") {
    Tensor same = interpolate_pos_encoding(pos, 32, 32, 8);
    CHECK(same.impl() == pos.impl());
  }
  SUBCASE("same patch count but not square: DINO still interpolates (to 2x8)") {
    Tensor out = interpolate_pos_encoding(pos, 16, 64, 8);
    CHECK(out.shape() == Shape{1, 17, 6});
    CHECK(max_abs_diff(slice(out, 1, 0, 1), slice(pos, 1, 0, 1)) == 0);  // class embedding kept
    CHECK(max_abs_diff(out, pos) > 1e-3);
  }
  SUBCASE("a trainable pos_embed is resized in the graph, to the host path's values") {
    Tensor trainable = pos.clone().set_requires_grad(true);
    Tensor in_graph = interpolate_pos_encoding(trainable, 40, 40, 8);
    CHECK(in_graph.requires_grad());
    Tensor on_host;
    {
      NoGradGuard no_grad;
      on_host = interpolate_pos_encoding(trainable, 40, 40, 8);
    }
    CHECK_FALSE(on_host.requires_grad());
    REQUIRE(in_graph.shape() == Shape{1, 26, 6});
    CHECK(max_abs_diff(in_graph.detach(), on_host) < 1e-6);
  }
  SUBCASE("a pos_embed without a square grid is refused") {
    CHECK_THROWS_WITH(interpolate_pos_encoding(random_tensor({1, 7, 6}, 9, -1, 1, DType::f32), 40, 40, 8),
                      doctest::Contains("does not hold a square grid"));
  }
}

TEST_CASE("vit blocks: bicubic_resize matches PyTorch's F.interpolate(mode='bicubic')") {
  // torch 1.13: F.interpolate(x [1,1,2,3], scale_factor=(2.1, 1.7), mode='bicubic') in float64.
  const std::vector<double> plane = {1, -2, 3, 0.5, 4, -1};
  const std::vector<double> expected = {
      1.4133642284292074,   -0.7192506501642907,  -2.68433583901203,   0.4926007639227737, 3.9151104029156953,
      1.0766036649768649,   0.045327315923897424, -0.8829490551781768, 0.7510533153881913, 2.487623673418948,
      0.48679767638092863,  1.3844171978397557,   2.2720186821089716,  1.2037098291422907, -0.012491580775770394,
      0.060839852584273144, 2.351507771685665,    4.5505360547837945,  1.5306183164316047, -1.818074558074384};
  int64_t out_h = 0, out_w = 0;
  const std::vector<double> got = bicubic_resize(plane, 1, 2, 3, 2.1, 1.7, out_h, out_w);
  CHECK(out_h == 4);
  CHECK(out_w == 5);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-13));

  const std::vector<double> identity = bicubic_resize(plane, 1, 2, 3, 1.0, 1.0, out_h, out_w);
  CHECK(identity == plane);
  CHECK_THROWS_WITH(bicubic_resize(plane, 1, 2, 3, 0.1, 1.0, out_h, out_w), doctest::Contains("empty output"));
}
