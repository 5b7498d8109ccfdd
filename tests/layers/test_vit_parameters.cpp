// Parameter names, order and shapes (DINO's state dict for vit_base_patch16, SimGCD's head
// names), initialisation, freezing, moving and loading.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ops.h"
#include "layers/simgcd_model.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// DINO's state_dict() order for a ViT (docs/backbone-and-data-facts.md §1.4).
std::vector<std::pair<std::string, Shape>> dino_names(const VitConfig& c) {
  const int64_t d = c.embed_dim, m = c.mlp_hidden_dim();
  std::vector<std::pair<std::string, Shape>> out = {
      {"cls_token", {1, 1, d}},
      {"pos_embed", {1, 1 + c.num_patches(), d}},
      {"patch_embed.proj.weight", {d, c.in_chans, c.patch_size, c.patch_size}},
      {"patch_embed.proj.bias", {d}}};
  for (int64_t i = 0; i < c.depth; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (auto& entry : std::vector<std::pair<std::string, Shape>>{{"norm1.weight", {d}},
                                                                  {"norm1.bias", {d}},
                                                                  {"attn.qkv.weight", {3 * d, d}},
                                                                  {"attn.qkv.bias", {3 * d}},
                                                                  {"attn.proj.weight", {d, d}},
                                                                  {"attn.proj.bias", {d}},
                                                                  {"norm2.weight", {d}},
                                                                  {"norm2.bias", {d}},
                                                                  {"mlp.fc1.weight", {m, d}},
                                                                  {"mlp.fc1.bias", {m}},
                                                                  {"mlp.fc2.weight", {d, m}},
                                                                  {"mlp.fc2.bias", {d}}})
      out.emplace_back(b + entry.first, entry.second);
  }
  out.emplace_back("norm.weight", Shape{d});
  out.emplace_back("norm.bias", Shape{d});
  return out;
}

void check_names(Module& module, const std::vector<std::pair<std::string, Shape>>& expected) {
  const auto params = module.named_parameters();
  REQUIRE(params.size() == expected.size());
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(i);
    CHECK(params[i].name == expected[i].first);
    CHECK(params[i].tensor.shape() == expected[i].second);
  }
}

ModelConfig small_config() {
  return parse_model_config("img=16,patch=4,dim=24,depth=3,heads=2,chans=2,classes=5,head_hidden=32,head_bottleneck=8");
}

double sample_std(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  double sum = 0, sq = 0;
  for (double x : v) sum += x, sq += x * x;
  const double mean = sum / static_cast<double>(v.size());
  return std::sqrt(sq / static_cast<double>(v.size()) - mean * mean);
}

}  // namespace

TEST_CASE("vit parameters: vit_base_patch16 has DINO's 150 state-dict names in order") {
  // Allocated, never initialised: no random draws for the 86M parameters.
  VisionTransformer vit(vit_base_patch16());
  check_names(vit, dino_names(vit_base_patch16()));
  CHECK(vit.parameter_count() == 85798656);
  CHECK(vit.named_parameters()[0].tensor.dtype() == DType::f32);

  vit.set_grad_from_block(11);  // SimGCD's default: blocks.11.* (12 tensors) only
  const auto trainable = vit.trainable_parameters();
  REQUIRE(trainable.size() == 12);
  for (const NamedParameter& p : trainable) CHECK(p.name.starts_with("blocks.11."));
}

TEST_CASE("vit parameters: SimGCD head names follow the backbone under head.") {
  SimGCDHead head(768, HeadConfig{2048, 256, 100});
  check_names(head, {{"mlp.0.weight", {2048, 768}},
                     {"mlp.0.bias", {2048}},
                     {"mlp.2.weight", {2048, 2048}},
                     {"mlp.2.bias", {2048}},
                     {"mlp.4.weight", {256, 2048}},
                     {"mlp.4.bias", {256}},
                     {"last_layer.weight_g", {100, 1}},
                     {"last_layer.weight_v", {100, 768}}});
  CHECK_FALSE(head.last_layer.weight_g.requires_grad());

  const ModelConfig config = small_config();
  SimGCDModel model(config);
  auto expected = dino_names(config.backbone);
  for (auto entry : std::vector<std::pair<std::string, Shape>>{{"mlp.0.weight", {32, 24}},
                                                               {"mlp.0.bias", {32}},
                                                               {"mlp.2.weight", {32, 32}},
                                                               {"mlp.2.bias", {32}},
                                                               {"mlp.4.weight", {8, 32}},
                                                               {"mlp.4.bias", {8}},
                                                               {"last_layer.weight_g", {5, 1}},
                                                               {"last_layer.weight_v", {5, 24}}})
    expected.emplace_back("head." + entry.first, entry.second);
  check_names(model, expected);
  CHECK_THROWS_WITH(SimGCDModel(parse_model_config("img=16,patch=4,dim=24,depth=1,heads=2")),
                    doctest::Contains("SimGCDHead: num_classes must be positive"));
}

TEST_CASE("vit parameters: initialisation follows DINO and SimGCD, one stream per name") {
  SimGCDModel model(small_config());
  model.initialize(7);
  for (const NamedParameter& p : model.named_parameters()) {
    INFO(p.name);
    const std::vector<double> v = p.tensor.to_vector<double>();
    auto all = [&](double value) {
      for (double x : v)
        if (x != value) return false;
      return true;
    };
    auto within = [&](double bound) {
      for (double x : v)
        if (!(std::abs(x) <= bound)) return false;
      return true;
    };
    if (p.name.ends_with("norm1.weight") || p.name.ends_with("norm2.weight") || p.name == "norm.weight" ||
        p.name.ends_with("weight_g")) {
      CHECK(all(1.0));
    } else if (p.name == "patch_embed.proj.weight" || p.name == "patch_embed.proj.bias") {
      CHECK(within(1.0 / std::sqrt(2.0 * 4 * 4)));  // U(±1/√(C·P·P))
      CHECK_FALSE(all(0.0));
    } else if (p.name.ends_with("weight_v")) {
      CHECK(within(1.0 / std::sqrt(24.0)));
      CHECK_FALSE(all(0.0));
    } else if (p.name.ends_with("bias")) {
      CHECK(all(0.0));
    } else {  // cls_token, pos_embed and Linear weights: trunc_normal(std 0.02)
      if (v.size() >= 500) CHECK(sample_std(p.tensor) == doctest::Approx(0.02).epsilon(0.1));
      CHECK_FALSE(all(0.0));
    }
  }
  // A parameter's values depend only on (seed, name): a deeper model draws the same block 0.
  SimGCDModel deeper(
      parse_model_config("img=16,patch=4,dim=24,depth=5,heads=2,chans=2,classes=5,head_hidden=32,head_bottleneck=8"));
  deeper.initialize(7);
  CHECK(max_abs_diff(deeper.backbone.blocks[0].attn.qkv.weight, model.backbone.blocks[0].attn.qkv.weight) == 0);
  CHECK(max_abs_diff(deeper.head.last_layer.weight_v, model.head.last_layer.weight_v) == 0);
  CHECK(max_abs_diff(model.backbone.blocks[0].mlp.fc1.weight, model.backbone.blocks[1].mlp.fc1.weight) > 0);
  SimGCDModel other(small_config());
  other.initialize(8);
  CHECK(max_abs_diff(other.backbone.pos_embed, model.backbone.pos_embed) > 0);
}

TEST_CASE("vit parameters: to(), state_dict() and load_parameters()") {
  SimGCDModel model(small_config());
  model.initialize(3);
  model.set_grad_from_block(2);
  const auto saved = model.state_dict();

  model.to(Device::cuda());
  for (const NamedParameter& p : model.named_parameters()) {
    INFO(p.name);
    CHECK(p.tensor.device() == Device::cuda());
    CHECK(p.tensor.requires_grad() ==
          (p.name.starts_with("blocks.2.") || (p.name.starts_with("head.") && !p.name.ends_with("weight_g"))));
  }
  SimGCDModel fresh(small_config());
  fresh.set_grad_from_block(2);
  fresh.to(Device::cuda());
  fresh.load_parameters(saved);  // CPU tensors into a CUDA model
  for (const NamedParameter& p : fresh.named_parameters()) {
    INFO(p.name);
    CHECK(p.tensor.device() == Device::cuda());
    CHECK(max_abs_diff(p.tensor.to(Device::cpu()), saved.at(p.name)) == 0);
    CHECK(p.tensor.storage() != saved.at(p.name).storage());
  }
  CHECK(fresh.trainable_parameters().size() == model.trainable_parameters().size());

  auto without = saved;
  without.erase("blocks.1.attn.qkv.bias");
  CHECK_THROWS_WITH(fresh.load_parameters(without),
                    doctest::Contains("load_parameters: missing 1 parameter(s): blocks.1.attn.qkv.bias"));
  auto extra = saved;
  extra["head.mlp.6.weight"] = zeros({2, 2});
  CHECK_THROWS_WITH(fresh.load_parameters(extra),
                    doctest::Contains("load_parameters: 1 unexpected key(s): head.mlp.6.weight"));
  auto reshaped = saved;
  reshaped["pos_embed"] = zeros({1, 26, 24});
  CHECK_THROWS_WITH(
      fresh.load_parameters(reshaped),
      doctest::Contains(
          "load_parameters: pos_embed has shape [1, 26, 24] in the weights but [1, 17, 24] in the model"));
}
