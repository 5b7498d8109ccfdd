// Model configurations: named, key=value overrides, JSON round trips, and the error messages.
#include <doctest/doctest.h>

#include "engine/error.h"
#include "layers/vit_config.h"

using namespace mcdl;

TEST_CASE("vit config: vit_base_patch16 is DINO's ViT-B/16") {
  const VitConfig c = vit_base_patch16();
  CHECK(c.img_size == 224);
  CHECK(c.patch_size == 16);
  CHECK(c.in_chans == 3);
  CHECK(c.embed_dim == 768);
  CHECK(c.depth == 12);
  CHECK(c.num_heads == 12);
  CHECK(c.head_dim() == 64);
  CHECK(c.mlp_hidden_dim() == 3072);
  CHECK(c.qkv_bias);
  CHECK(c.norm_eps == 1e-6);
  CHECK(c.num_patches() == 196);
  CHECK(parse_model_config("vit_base_patch16").backbone == c);
  CHECK_FALSE(parse_model_config("vit_base_patch16").has_head());
}

TEST_CASE("vit config: key=value overrides") {
  const ModelConfig m = parse_model_config("img=28,patch=7,dim=64,depth=4,heads=4,chans=1");
  CHECK(m.backbone.img_size == 28);
  CHECK(m.backbone.patch_size == 7);
  CHECK(m.backbone.embed_dim == 64);
  CHECK(m.backbone.depth == 4);
  CHECK(m.backbone.num_heads == 4);
  CHECK(m.backbone.in_chans == 1);
  CHECK(m.backbone.mlp_hidden_dim() == 256);  // int(dim · mlp_ratio 4)
  CHECK(m.backbone.num_patches() == 16);
  CHECK(m.backbone.norm_eps == 1e-6);
  CHECK_FALSE(m.has_head());

  const ModelConfig h =
      parse_model_config("vit_base_patch16,classes=100,head_hidden=512,mlp_ratio=2.5,qkv_bias=false,eps=1e-5");
  CHECK(h.has_head());
  CHECK(h.head.num_classes == 100);
  CHECK(h.head.hidden_dim == 512);
  CHECK(h.head.bottleneck_dim == 256);
  CHECK(h.backbone.mlp_hidden_dim() == 1920);
  CHECK_FALSE(h.backbone.qkv_bias);
  CHECK(h.backbone.norm_eps == 1e-5);
}

TEST_CASE("vit config: spec errors name the problem") {
  CHECK_THROWS_WITH(parse_model_config("img=28,foo=1"),
                    doctest::Contains("config 'img=28,foo=1': unknown key 'foo' (known keys: chans, classes, depth"));
  CHECK_THROWS_WITH(parse_model_config("img=abc"),
                    doctest::Contains("bad value 'abc' for 'img' (expected a positive integer)"));
  CHECK_THROWS_WITH(parse_model_config("depth=0"), doctest::Contains("bad value '0' for 'depth'"));
  CHECK_THROWS_WITH(parse_model_config("dim=12x"), doctest::Contains("bad value '12x' for 'dim'"));
  CHECK_THROWS_WITH(parse_model_config("eps=-1"),
                    doctest::Contains("bad value '-1' for 'eps' (expected a positive number)"));
  CHECK_THROWS_WITH(parse_model_config("qkv_bias=yes"), doctest::Contains("expected true or false"));
  CHECK_THROWS_WITH(parse_model_config("classes=-3"), doctest::Contains("expected a non-negative integer"));
  CHECK_THROWS_WITH(parse_model_config("img="), doctest::Contains("bad value '' for 'img'"));
  CHECK_THROWS_WITH(parse_model_config("vit_huge"),
                    doctest::Contains("unknown configuration name 'vit_huge' (known: vit_base_patch16"));
  CHECK_THROWS_WITH(parse_model_config("img=28,vit_base_patch16"),
                    doctest::Contains("item 'vit_base_patch16' is not key=value"));
  CHECK_THROWS_WITH(parse_model_config("img=28,img=32"), doctest::Contains("key 'img' is given twice"));
  CHECK_THROWS_WITH(parse_model_config("img=28,"), doctest::Contains("item '' is not key=value"));
  CHECK_THROWS_WITH(parse_model_config(""), doctest::Contains("config: empty configuration"));
  CHECK_THROWS_WITH(parse_model_config("img=30,patch=7"),
                    doctest::Contains("vit config: image size 30 is not a multiple of the patch size 7"));
  CHECK_THROWS_WITH(parse_model_config("dim=64,heads=5"),
                    doctest::Contains("vit config: dim 64 is not divisible by 5 heads"));
  CHECK_THROWS_WITH(parse_model_config("dim=2,heads=1,mlp_ratio=0.1"), doctest::Contains("gives no MLP hidden units"));
}

TEST_CASE("vit config: JSON round trip") {
  for (const std::string spec :
       {"vit_base_patch16", "img=28,patch=7,dim=64,depth=4,heads=4,chans=1,classes=10,eps=1e-5",
        "mlp_ratio=2.75,qkv_bias=false,head_hidden=32,head_bottleneck=8,classes=3"}) {
    INFO(spec);
    const ModelConfig config = parse_model_config(spec);
    const std::string json = model_config_to_json(config);
    CHECK(model_config_from_json(json) == config);
    CHECK(json.find("\"architecture\":\"dino_vit\"") != std::string::npos);
    CHECK((json.find("\"head\"") != std::string::npos) == config.has_head());
  }
}

TEST_CASE("vit config: JSON errors name the field") {
  const std::string good = model_config_to_json(parse_model_config("img=28,patch=7,dim=64,depth=4,heads=4,chans=1"));
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  CHECK_THROWS_WITH(model_config_from_json("{not json"), doctest::Contains("model config JSON: cannot parse"));
  CHECK_THROWS_WITH(model_config_from_json("[1]"), doctest::Contains("model config JSON: expected an object"));
  CHECK_THROWS_WITH(model_config_from_json(replaced("\"dino_vit\"", "\"resnet\"")),
                    doctest::Contains("architecture must be \"dino_vit\", got \"resnet\""));
  CHECK_THROWS_WITH(model_config_from_json(replaced("\"depth\":4,", "")),
                    doctest::Contains("model config JSON: backbone has no field 'depth'"));
  CHECK_THROWS_WITH(model_config_from_json(replaced("\"depth\":4", "\"depth\":4,\"width\":3")),
                    doctest::Contains("backbone has an unknown field 'width'"));
  CHECK_THROWS_WITH(model_config_from_json(replaced("\"depth\":4", "\"depth\":\"4\"")),
                    doctest::Contains("backbone.depth must be an integer, got \"4\""));
  CHECK_THROWS_WITH(model_config_from_json(replaced("\"qkv_bias\":true", "\"qkv_bias\":1")),
                    doctest::Contains("backbone.qkv_bias must be true or false"));
  CHECK_THROWS_WITH(model_config_from_json(replaced("\"depth\":4", "\"depth\":0")),
                    doctest::Contains("vit config: sizes must be positive"));
  CHECK_THROWS_WITH(model_config_from_json(replaced("}}", "},\"extra\":1}")),
                    doctest::Contains("unknown field 'extra' (known: architecture, backbone, head)"));
  CHECK_THROWS_WITH(model_config_from_json(replaced("}}", "},\"head\":{\"hidden_dim\":8}}")),
                    doctest::Contains("head has no field 'bottleneck_dim'"));
}
