// The converter on DINOv2's files (tools/make_dinov2_fixtures.py: torch.save state dicts with the
// official names, Hugging Face Dinov2Model safetensors, with and without registers): what is
// mapped and dropped, every missing or misshapen tensor named, the wrong configuration caught,
// chunked block names, truncated and damaged files, and the mcdl_convert binary.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "layers/backbone_file.h"
#include "layers/dino_checkpoint.h"
#include "tests/gradcheck.h"
#include "tests/io/checkpoint_builders.h"
#include "tests/layers/dinov2_fixture.h"
#include "tests/tool_binary.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

std::map<std::string, Tensor> read(const std::string& file) {
  return read_checkpoint_tensors(dinov2_fixture_path(file)).tensors;
}

const char* kSpec = "img=28,patch=7,dim=24,depth=2,heads=3,mlp_ratio=2,layer_scale=true,pos_img=35,registers=4";
const char* kConfigText =
    "img 28, patch 7, chans 3, dim 24, depth 2, heads 3, mlp 48, qkv bias, layer scale, "
    "4 registers, pos_embed 5x5";

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("convert dinov2: the official .pth holds DINOv2's names; registers only where the file has them") {
  const auto official = read("dinov2_reg4.pth");
  CHECK(official.size() == 6 + 14 * 2 + 2);  // cls, pos, registers, mask, patch conv; blocks; norm
  CHECK(official.count("mask_token") == 1);
  CHECK(official.count("blocks.1.ls2.gamma") == 1);

  const BackboneConversion c = convert_dino_backbone(official, dinov2_fixture_config(4));
  CHECK(c.tensors.size() == official.size() - 1);
  CHECK(c.tensors.count("mask_token") == 0);
  CHECK(c.tensors.at("register_tokens").shape() == Shape{1, 4, 24});
  CHECK(c.tensors.at("pos_embed").shape() == Shape{1, 26, 24});  // the stored 5x5 grid, kept as stored

  // A file without registers converted for a model with them, and the other way round.
  CHECK_THROWS_WITH(convert_dino_backbone(read("dinov2.pth"), dinov2_fixture_config(4)),
                    doctest::Contains((std::string("missing 1 tensor(s) of the configuration (") + kConfigText +
                                       "): 'register_tokens' [1, 4, 24]")
                                          .c_str()));
  CHECK_THROWS_WITH(convert_dino_backbone(official, dinov2_fixture_config(0)),
                    doctest::Contains("'register_tokens' is a DINO ViT parameter that the configuration"));
  CHECK_THROWS_WITH(convert_dino_backbone(read("dinov2_reg4_hf.safetensors"), dinov2_fixture_config(0)),
                    doctest::Contains("'embeddings.register_tokens' is a DINO ViT parameter that the configuration"));
  // A DINO (v1) configuration: the LayerScale gains give the mistake away.
  CHECK_THROWS_WITH(
      convert_dino_backbone(read("dinov2.pth"), parse_model_config("img=28,patch=7,dim=24,depth=2,heads=3,mlp_ratio=2,"
                                                                   "pos_img=35")
                                                    .backbone),
      doctest::Contains("'blocks.0.ls1.gamma' is a DINO ViT parameter that the configuration"));
  // A real model's configuration (ViT-S/14, 37x37 stored grid) against the fixture's file.
  CHECK_THROWS_WITH(convert_dino_backbone(official, parse_model_config("vit_small_patch14_dinov2_reg4").backbone),
                    doctest::Contains("but the configuration (img 224, patch 14, chans 3, dim 384, depth 12, heads "
                                      "6, mlp 1536, qkv bias, layer scale, 4 registers, pos_embed 37x37) expects"));
}

TEST_CASE("convert dinov2: missing and misshapen tensors are named, in both layouts") {
  const VitConfig config = dinov2_fixture_config(4);
  auto official = read("dinov2_reg4.pth");
  auto no_gain = official;
  no_gain.erase("blocks.1.ls2.gamma");
  CHECK_THROWS_WITH(convert_dino_backbone(no_gain, config),
                    doctest::Contains(("missing 1 tensor(s) of the configuration (" + std::string(kConfigText) +
                                       "): 'blocks.1.ls2.gamma' [24]")
                                          .c_str()));
  auto wide_gain = official;
  wide_gain["blocks.0.ls1.gamma"] = zeros({25});
  CHECK_THROWS_WITH(convert_dino_backbone(wide_gain, config),
                    doctest::Contains("'blocks.0.ls1.gamma' has shape [25] but the configuration"));
  auto big_grid = official;
  big_grid["pos_embed"] = zeros({1, 1370, 24});
  CHECK_THROWS_WITH(convert_dino_backbone(big_grid, config),
                    doctest::Contains("'pos_embed' has shape [1, 1370, 24] but the configuration"));
  auto extra = official;
  extra["dino_head.weight"] = zeros({2, 2});
  const BackboneConversion with_extra = convert_dino_backbone(extra, config);
  REQUIRE(with_extra.warnings.size() == 1);
  CHECK(with_extra.warnings[0] ==
        "ignored unknown tensor 'dino_head.weight' f32[2, 2] (not a DINO ViT backbone parameter)");

  auto hf = read("dinov2_reg4_hf.safetensors");
  auto hf_no_gain = hf;
  hf_no_gain.erase("encoder.layer.0.layer_scale1.lambda1");
  CHECK_THROWS_WITH(convert_dino_backbone(hf_no_gain, config), doctest::Contains("'blocks.0.ls1.gamma' [24]"));
  auto hf_bad_key = hf;
  hf_bad_key["encoder.layer.1.attention.attention.key.weight"] = zeros({24, 23});
  CHECK_THROWS_WITH(convert_dino_backbone(hf_bad_key, config),
                    doctest::Contains("'encoder.layer.1.attention.attention.key.weight' has shape [24, 23] but the "
                                      "configuration"));
  auto hf_no_registers = hf;
  hf_no_registers.erase("embeddings.register_tokens");
  CHECK_THROWS_WITH(convert_dino_backbone(hf_no_registers, config), doctest::Contains("'register_tokens' [1, 4, 24]"));
}

TEST_CASE("convert dinov2: chunked block names (blocks.<chunk>.<i>.) read as blocks.<i>.") {
  const auto official = read("dinov2_reg4.pth");
  std::map<std::string, Tensor> chunked;
  for (const auto& [name, tensor] : official) {
    // Two chunks of one block each, as block_chunks = 2 would save them.
    if (name.starts_with("blocks.")) {
      chunked.emplace("blocks." + name.substr(7, 1) + "." + name.substr(7), tensor);
    } else {
      chunked.emplace(name, tensor);
    }
  }
  REQUIRE(chunked.count("blocks.1.1.attn.qkv.weight") == 1);
  const BackboneConversion c = convert_dino_backbone(chunked, dinov2_fixture_config(4));
  const BackboneConversion plain = convert_dino_backbone(official, dinov2_fixture_config(4));
  REQUIRE(c.tensors.size() == plain.tensors.size());
  for (const auto& [name, tensor] : plain.tensors) CHECK(max_abs_diff(c.tensors.at(name), tensor) == 0);
  bool noted = false;
  for (const std::string& note : c.notes)
    noted = noted || note == "read 28 tensors of chunked blocks (blocks.<chunk>.<i>. as blocks.<i>.)";
  CHECK(noted);
}

TEST_CASE("convert dinov2: truncated and damaged files give one clear error, never a crash") {
  TempDir dir("mcdl_test_convert_dinov2");
  const std::string pth = read_binary_file(dinov2_fixture_path("dinov2_reg4.pth"));
  const std::string hf = read_binary_file(dinov2_fixture_path("dinov2_reg4_hf.safetensors"));
  write_binary_file(dir.file("cut.pth"), pth.substr(0, pth.size() - 1000));
  CHECK_THROWS_WITH(read_checkpoint_tensors(dir.file("cut.pth")), doctest::Contains("no end-of-central-directory"));
  write_binary_file(dir.file("cut.safetensors"), hf.substr(0, hf.size() - 8));
  CHECK_THROWS_WITH(read_checkpoint_tensors(dir.file("cut.safetensors")), doctest::Contains("safetensors"));
  for (size_t n = 0; n < hf.size(); n += 997) {
    write_binary_file(dir.file("part.safetensors"), hf.substr(0, n));
    CHECK_THROWS_AS(read_checkpoint_tensors(dir.file("part.safetensors")), Error);
  }
  for (size_t n = 0; n < pth.size(); n += 4093)
    CHECK_THROWS_AS(read_torch_checkpoint(as_bytes(pth.substr(0, n)), "cut"), Error);

  // Byte flips: in the zip every entry has a CRC; in the safetensors file the header is JSON.
  std::mt19937 rng(2026);
  int errors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string damaged = trial % 2 ? pth : hf;
    const size_t header = trial % 2 ? damaged.size() : std::min<size_t>(damaged.size(), 4096);
    damaged[rng() % header] = static_cast<char>(rng());
    write_binary_file(dir.file("flip"), damaged);
    try {
      convert_dino_backbone(read_checkpoint_tensors(dir.file("flip")).tensors, dinov2_fixture_config(4));
    } catch (const Error&) {
      ++errors;
    }
  }
  CHECK(errors > 100);
}

TEST_CASE("mcdl_convert dinov2: converts the official .pth and the Hugging Face file, notes the mask token") {
  const std::string convert = testing::tool_binary("mcdl_convert");
  REQUIRE_MESSAGE(std::filesystem::exists(convert), "build ./mcdl_convert first (make test does)");
  TempDir dir("mcdl_test_convert_dinov2_tool");
  const std::string out = dir.file("stdout"), err = dir.file("stderr");
  for (const char* file : {"dinov2_reg4.pth", "dinov2_reg4_hf.safetensors"}) {
    INFO(file);
    const std::string converted = dir.file("reg4.safetensors");
    CHECK(run(convert + " " + dinov2_fixture_path(file) + " -o " + converted + " --config " + kSpec + " > " + out +
              " 2> " + err) == 0);
    const std::string summary = read_binary_file(out);
    CHECK(summary.find("note: dropped the mask token") != std::string::npos);
    CHECK(summary.find("wrote " + converted + ": 35 tensors") != std::string::npos);
    CHECK(read_binary_file(err).empty());
    const BackboneFile loaded = load_backbone_file(converted);
    CHECK(loaded.config.backbone == dinov2_fixture_config(4));
  }
  // The default configuration (DINO ViT-B/16) names the first tensor it cannot place.
  CHECK(run(convert + " " + dinov2_fixture_path("dinov2.pth") + " -o " + dir.file("x.safetensors") + " > " + out +
            " 2> " + err) == 1);
  CHECK(read_binary_file(err).find("'blocks.0.ls1.gamma' is a DINO ViT parameter that the configuration (img 224, "
                                   "patch 16") != std::string::npos);
}
