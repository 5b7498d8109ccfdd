// The DINO checkpoint converter: real torch.save files (tools/make_checkpoint_fixtures.py, torch
// 1.13) in every layout it accepts, the converted fixture ViT against PyTorch's reference CLS
// output, malformed inputs built here byte by byte, and the mcdl_convert binary's exit codes.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "engine/autograd.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "layers/dino_checkpoint.h"
#include "layers/vision_transformer.h"
#include "tests/io/checkpoint_builders.h"
#include "tests/layers/vit_test_util.h"
#include "tests/tool_binary.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

std::string fixture(const std::string& name) {
  namespace fs = std::filesystem;
  return (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "checkpoints" / name).string();
}

const char* kTinySpec = "img=8,patch=4,chans=3,dim=8,depth=2,heads=2";
VitConfig tiny_config() { return parse_model_config(kTinySpec).backbone; }

std::map<std::string, Tensor> tiny_expected() { return load_safetensors(fixture("tiny_expected.safetensors")).tensors; }

bool contains(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

// Same names and values within rtol (0: bitwise equal values).
void check_same_tensors(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& expected,
                        double rtol = 0) {
  REQUIRE(got.size() == expected.size());
  for (const auto& [name, want] : expected) {
    INFO(name);
    REQUIRE(got.count(name) == 1);
    const Tensor& t = got.at(name);
    CHECK(t.dtype() == DType::f32);
    REQUIRE(t.shape() == want.shape());
    const std::vector<float> g = t.to_vector<float>(), w = want.to_vector<float>();
    for (size_t i = 0; i < g.size(); ++i) {
      if (rtol == 0) {
        CHECK(g[i] == w[i]);
      } else {
        CHECK(std::abs(g[i] - w[i]) <= rtol * std::abs(w[i]) + 1e-7);
      }
    }
  }
}

// A torch-style zip around a data.pkl and storages.
std::string checkpoint_zip(const std::string& pickle,
                           const std::vector<std::pair<std::string, std::string>>& storages) {
  ZipSpec spec;
  spec.entries.push_back({"ckpt/data.pkl", pickle});
  for (const auto& [key, data] : storages) spec.entries.push_back({"ckpt/data/" + key, data});
  spec.entries.push_back({"ckpt/version", "3\n"});
  return build_zip(spec);
}

std::string floats(const std::vector<float>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)};
}

// {"w": a float32 tensor over storage "0"}
std::string one_tensor_pickle(int32_t numel, int32_t offset, const std::vector<int32_t>& size,
                              const std::vector<int32_t>& stride) {
  return PickleBuilder().op('}').str("w").float_tensor("0", numel, offset, size, stride).op('s').stop();
}

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("convert: the fixture ViT from a torch zip checkpoint reproduces PyTorch's CLS output") {
  const VitFixture& fx = vit_fixture();
  const CheckpointTensors read = read_checkpoint_tensors(fixture("vit_fixture.pth"));
  CHECK(read.format == "torch zip");
  CHECK(read.tensors.size() == 30);
  const BackboneConversion converted = convert_dino_backbone(read.tensors, fx.config.backbone);
  CHECK(converted.notes.empty());
  CHECK(converted.warnings.empty());

  TempDir dir("mcdl_test_convert");
  save_dino_backbone(dir.file("vit.safetensors"), converted, fx.config.backbone);
  const SafetensorsFile file = load_safetensors(dir.file("vit.safetensors"));
  const ModelConfig config = model_config_from_json(file.metadata.at("config"));
  CHECK(config.backbone == fx.config.backbone);
  CHECK_FALSE(config.has_head());
  std::map<std::string, Tensor> backbone_weights;
  for (const auto& [name, t] : fx.weights) {
    if (name.rfind("head.", 0) != 0) backbone_weights.emplace(name, t);
  }
  check_same_tensors(file.tensors, backbone_weights);

  VisionTransformer vit(config.backbone);
  vit.load_parameters(file.tensors);
  NoGradGuard no_grad;
  check_close_scaled("converted CLS features", vit.forward(fx.reference.at("images_32")),
                     fx.reference.at("features_32"));
}

TEST_CASE("convert: legacy format, DINO full checkpoint, Hugging Face names and float16 all give the same backbone") {
  const auto expected = tiny_expected();
  SUBCASE("legacy (with a non-contiguous tensor)") {
    const CheckpointTensors read = read_checkpoint_tensors(fixture("tiny_legacy.pth"));
    CHECK(read.format == "torch legacy");
    const BackboneConversion c = convert_dino_backbone(read.tensors, tiny_config());
    check_same_tensors(c.tensors, expected);
    CHECK(c.notes.empty());
  }
  SUBCASE("DINO full checkpoint: the teacher, prefixes stripped, head dropped") {
    const CheckpointTensors read = read_checkpoint_tensors(fixture("tiny_full_checkpoint.pth"));
    REQUIRE(read.notes.size() == 1);
    CHECK(read.notes[0].find("state dict taken from 'teacher'; ignored the other entries: student, optimizer, epoch, "
                             "args, dino_loss") != std::string::npos);
    const BackboneConversion c = convert_dino_backbone(read.tensors, tiny_config());
    check_same_tensors(c.tensors, expected);  // the student's values differ by 1
    CHECK(contains(c.notes, "stripped the prefix 'backbone.' from 30 keys"));
    CHECK(contains(c.notes, "dropped 2 projection-head tensors (head.*)"));
    CHECK(c.warnings.empty());
  }
  SUBCASE("Hugging Face ViTModel names (query/key/value views of one storage)") {
    const CheckpointTensors read = read_checkpoint_tensors(fixture("tiny_hf.bin"));
    const BackboneConversion c = convert_dino_backbone(read.tensors, tiny_config());
    check_same_tensors(c.tensors, expected);
    CHECK(contains(c.notes, "mapped 38 Hugging Face ViTModel names"));
    CHECK(contains(c.notes, "dropped 2 Hugging Face pooler tensors"));
  }
  SUBCASE("float16") {
    const CheckpointTensors read = read_checkpoint_tensors(fixture("tiny_f16.pth"));
    CHECK(contains(read.notes, "30 float16 tensor(s) converted to f32"));
    check_same_tensors(convert_dino_backbone(read.tensors, tiny_config()).tensors, expected, 1.0 / 2048);
  }
  SUBCASE("safetensors input with module. prefixes and an unknown key") {
    std::map<std::string, Tensor> prefixed;
    for (const auto& [name, t] : expected) prefixed.emplace("module." + name, t);
    prefixed.emplace("module.extra_token", zeros({1, 2}));
    TempDir dir("mcdl_test_convert");
    save_safetensors(dir.file("in.safetensors"), prefixed);
    const CheckpointTensors read = read_checkpoint_tensors(dir.file("in.safetensors"));
    CHECK(read.format == "safetensors");
    const BackboneConversion c = convert_dino_backbone(read.tensors, tiny_config());
    check_same_tensors(c.tensors, expected);
    REQUIRE(c.warnings.size() == 1);
    CHECK(c.warnings[0] == "ignored unknown tensor 'module.extra_token' f32[1, 2] (not a DINO ViT backbone parameter)");
  }
}

TEST_CASE("torch checkpoint: strided views, offsets and storage bounds") {
  // A [3, 2] transposed view of a 6-element storage, and another tensor sharing it at offset 2.
  const std::string pickle = PickleBuilder()
                                 .op('}')
                                 .mark()
                                 .str("t")
                                 .float_tensor("0", 6, 0, {3, 2}, {1, 3})
                                 .str("tail")
                                 .float_tensor("0", 6, 2, {4}, {1})
                                 .op('u')
                                 .stop();
  const std::string zip = checkpoint_zip(pickle, {{"0", floats({0, 1, 2, 3, 4, 5})}});
  const TorchCheckpoint ckpt = read_torch_checkpoint(as_bytes(zip), "views.pth");
  CHECK(ckpt.tensors.at("t").to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(ckpt.tensors.at("tail").to_vector<float>() == std::vector<float>{2, 3, 4, 5});

  CHECK_THROWS_WITH(read_torch_checkpoint(as_bytes(checkpoint_zip(one_tensor_pickle(4, 0, {2, 3}, {3, 1}),
                                                                  {{"0", floats({0, 1, 2, 3})}})),
                                          "small.pth"),
                    doctest::Contains("torch checkpoint: small.pth: tensor 'w' (storage '0'): storage smaller than its "
                                      "tensor's extent: shape [2, 3] with strides [3, 1] from offset 0 reaches element "
                                      "5 but the storage holds 4 float32 elements"));
  CHECK_THROWS_WITH(read_torch_checkpoint(as_bytes(checkpoint_zip(one_tensor_pickle(6, 1, {2, 3}, {3, 1}),
                                                                  {{"0", floats({0, 1, 2, 3, 4, 5})}})),
                                          "offset.pth"),
                    doctest::Contains("storage smaller than its tensor's extent"));
  CHECK_THROWS_WITH(read_torch_checkpoint(as_bytes(checkpoint_zip(one_tensor_pickle(6, 0, {2, 3}, {3, 1}),
                                                                  {{"0", floats({0, 1, 2, 3})}})),
                                          "short.pth"),
                    doctest::Contains("storage 'ckpt/data/0' holds 16 bytes but 6 float32 elements need 24"));
  CHECK_THROWS_WITH(
      read_torch_checkpoint(as_bytes(checkpoint_zip(one_tensor_pickle(6, 0, {2, 3}, {3, 1}), {})), "nodata.pth"),
      doctest::Contains("storage '0': no entry 'ckpt/data/0'"));
  CHECK_THROWS_WITH(read_torch_checkpoint(as_bytes(checkpoint_zip(one_tensor_pickle(6, 0, {2, 3}, {3, -1}),
                                                                  {{"0", floats({0, 1, 2, 3, 4, 5})}})),
                                          "negative.pth"),
                    doctest::Contains("negative stride"));
  // A zero stride expands one stored element; materialising 2^30 of them is refused.
  CHECK(read_torch_checkpoint(as_bytes(checkpoint_zip(one_tensor_pickle(1, 0, {2, 3}, {0, 0}), {{"0", floats({7})}})),
                              "expanded.pth")
            .tensors.at("w")
            .to_vector<float>() == std::vector<float>(6, 7.0f));
  CHECK_THROWS_WITH(read_torch_checkpoint(as_bytes(checkpoint_zip(one_tensor_pickle(1, 0, {1 << 15, 1 << 15}, {0, 0}),
                                                                  {{"0", floats({7})}})),
                                          "bomb.pth"),
                    doctest::Contains("expands 1 stored elements to 1073741824, beyond the limit"));
}

TEST_CASE("torch checkpoint: random byte flips in a legacy file give a result or an error, never a crash") {
  const std::string legacy = read_binary_file(fixture("tiny_legacy.pth"));
  std::mt19937 rng(12345);
  int errors = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string damaged = legacy;
    // Mostly inside the pickles (the first ~6 KB), where the structure is.
    const size_t at = rng() % std::min<size_t>(damaged.size(), trial % 2 ? 6000 : damaged.size());
    damaged[at] = static_cast<char>(rng());
    try {
      read_torch_checkpoint(as_bytes(damaged), "damaged.pth");
    } catch (const Error&) {
      ++errors;
    }
  }
  CHECK(errors > 500);  // the error paths were exercised (flips in storage data go unnoticed: no CRC in this format)
}

TEST_CASE("torch checkpoint: malformed files give one clear error each") {
  TempDir dir("mcdl_test_convert");
  const std::string zip = read_binary_file(fixture("vit_fixture.pth"));
  const std::string legacy = read_binary_file(fixture("tiny_legacy.pth"));
  auto bad_file = [&](const std::string& name, const std::string& bytes) {
    write_binary_file(dir.file(name), bytes);
    return dir.file(name);
  };

  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("cut.pth", zip.substr(0, zip.size() / 2))),
                    doctest::Contains("no end-of-central-directory record"));
  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("cut_legacy.pth", legacy.substr(0, legacy.size() - 100))),
                    doctest::Contains("truncated"));
  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("cut_pickle.pth", legacy.substr(0, 200))),
                    doctest::Contains("truncated stream"));
  for (size_t n = 0; n < 600; n += 7) {  // truncations through the pickles: errors, never crashes
    CHECK_THROWS_AS(read_torch_checkpoint(as_bytes(legacy.substr(0, n)), "cut"), Error);
  }

  std::string magic = legacy;
  magic[5] = '\x00';
  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("magic.pth", magic)),
                    doctest::Contains("wrong magic number int (beyond 64 bits) (not a legacy torch.save file)"));
  CHECK_THROWS_WITH(read_torch_checkpoint(as_bytes(std::string("GARBAGE!")), "junk.pth"),
                    doctest::Contains("not a PyTorch checkpoint (neither a zip archive nor the legacy format: the file "
                                      "starts 47 41 52 42 41 47 45 21)"));

  const std::string attack =
      "\x80\x02"
      "cos\nsystem\n"
      "X\x02\x00\x00\x00"
      "ls"
      "\x85R.";
  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("evil.pth", checkpoint_zip(attack, {}))),
                    doctest::Contains(("pickle: ckpt/data.pkl of " + dir.file("evil.pth") +
                                       ": byte 2: global 'os.system' is not allowed")
                                          .c_str()));

  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("notes.txt", "root:x:0:0:root:/root:/bin/bash\n")),
                    doctest::Contains("notes.txt: neither a PyTorch checkpoint (torch.save's zip or legacy format) "
                                      "nor a safetensors file (it starts 72 6f 6f 74 3a 78 3a 30)"));
  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("tiny.bin", "ab")),
                    doctest::Contains("nor a safetensors file (it starts 61 62)"));
  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("empty.pth", "")),
                    doctest::Contains("empty.pth: the file is empty; expected a PyTorch checkpoint (.pth) or a "
                                      "safetensors file"));

  const std::string header("\xe8\x03\0\0\0\0\0\0{}", 10);  // a 1000-byte safetensors header in a 10-byte file
  CHECK_THROWS_WITH(read_checkpoint_tensors(bad_file("overrun.safetensors", header)),
                    doctest::Contains("header length 1000 is larger than the file (10 bytes)"));

  const std::string no_state_dict = PickleBuilder().op('}').str("epoch").integer(3).op('s').stop();
  CHECK_THROWS_WITH(
      read_torch_checkpoint(as_bytes(checkpoint_zip(no_state_dict, {})), "epoch.pth"),
      doctest::Contains("the checkpoint is not a state dict (a dict whose values are all tensors) and has "
                        "none of the keys 'teacher', 'state_dict', 'model', 'student'; it holds "
                        "{'epoch': int 3}"));
}

TEST_CASE("convert: missing keys, wrong shapes, a wrong configuration and bad names are errors") {
  const VitConfig config = tiny_config();
  auto expected = tiny_expected();

  auto missing = expected;
  missing.erase("norm.bias");
  CHECK_THROWS_WITH(
      convert_dino_backbone(missing, config),
      doctest::Contains("dino checkpoint: missing 1 tensor(s) of the configuration (img 8, patch 4, chans "
                        "3, dim 8, depth 2, heads 2, mlp 32, qkv bias): 'norm.bias' [8]"));

  auto reshaped = expected;
  reshaped["module.backbone.pos_embed"] = zeros({1, 4, 8});
  reshaped.erase("pos_embed");
  CHECK_THROWS_WITH(convert_dino_backbone(reshaped, config),
                    doctest::Contains("'pos_embed' (from 'module.backbone.pos_embed') has shape [1, 4, 8] but the "
                                      "configuration (img 8, patch 4"));

  CHECK_THROWS_WITH(
      convert_dino_backbone(expected, parse_model_config("img=8,patch=4,dim=8,depth=1,heads=2").backbone),
      doctest::Contains("'blocks.1.attn.proj.bias' is a DINO ViT parameter that the configuration (img 8, "
                        "patch 4, chans 3, dim 8, depth 1, heads 2, mlp 32, qkv bias) does not have: "
                        "wrong --config?"));

  auto twice = expected;
  twice["module.cls_token"] = expected.at("cls_token");
  CHECK_THROWS_WITH(convert_dino_backbone(twice, config),
                    doctest::Contains("'cls_token' and 'module.cls_token' both map to 'cls_token'"));

  auto integer = expected;
  integer["norm.weight"] = zeros({8}, DType::i64);
  CHECK_THROWS_WITH(convert_dino_backbone(integer, config),
                    doctest::Contains("'norm.weight' is i64[8], not a floating-point tensor"));

  auto hf = read_checkpoint_tensors(fixture("tiny_hf.bin")).tensors;
  auto no_value = hf;
  no_value.erase("encoder.layer.1.attention.attention.value.weight");
  CHECK_THROWS_WITH(convert_dino_backbone(no_value, config),
                    doctest::Contains("missing the value part of 'blocks.1.attn.qkv.weight'"));
  auto bad_query = hf;
  bad_query["encoder.layer.0.attention.attention.query.bias"] = zeros({9});
  CHECK_THROWS_WITH(convert_dino_backbone(bad_query, config),
                    doctest::Contains("'encoder.layer.0.attention.attention.query.bias' has shape [9] but the "
                                      "configuration"));
}

TEST_CASE("mcdl_convert: the binary's summary, messages and exit codes") {
  const std::string convert = testing::tool_binary("mcdl_convert");
  REQUIRE_MESSAGE(std::filesystem::exists(convert), "build ./mcdl_convert first (make test does)");
  TempDir dir("mcdl_test_convert_tool");
  const std::string out = dir.file("stdout"), err = dir.file("stderr");
  const std::string redirect = " > " + out + " 2> " + err;

  CHECK(run(convert + " --help" + redirect) == 0);
  CHECK(read_binary_file(out).find("usage: mcdl_convert IN -o OUT.safetensors") != std::string::npos);
  CHECK(run(convert + redirect) == 2);
  CHECK(read_binary_file(err).find("mcdl_convert: no input file") != std::string::npos);
  CHECK(run(convert + " x.pth -o y --bogus" + redirect) == 2);
  CHECK(run(convert + " x.pth -o y --config depth=zero" + redirect) == 2);

  const std::string converted = dir.file("tiny.safetensors");
  CHECK(run(convert + " " + fixture("tiny_full_checkpoint.pth") + " -o " + converted + " --config " + kTinySpec +
            redirect) == 0);
  const std::string summary = read_binary_file(out);
  CHECK(summary.find("(torch zip): 32 tensors") != std::string::npos);  // the teacher's 30 + 2 head tensors
  CHECK(summary.find("note: state dict taken from 'teacher'") != std::string::npos);
  CHECK(summary.find("wrote " + converted + ": 30 tensors, 2200 parameters, 8800 bytes (f32)") != std::string::npos);
  check_same_tensors(load_safetensors(converted).tensors, tiny_expected());

  // The default configuration (ViT-B/16) does not fit the tiny file: exit 1, one line on stderr.
  CHECK(run(convert + " " + fixture("tiny_legacy.pth") + " -o " + converted + redirect) == 1);
  const std::string message = read_binary_file(err);
  CHECK(message.rfind("mcdl_convert: dino checkpoint: 'blocks.0.attn.proj.bias' has shape [8] but the configuration",
                      0) == 0);
  CHECK(std::count(message.begin(), message.end(), '\n') == 1);
  CHECK(run(convert + " " + dir.file("absent.pth") + " -o " + converted + redirect) == 1);
  CHECK(read_binary_file(err).find("cannot open") != std::string::npos);
  write_binary_file(dir.file("readme.txt"), "This is not a checkpoint.\n");
  CHECK(run(convert + " " + dir.file("readme.txt") + " -o " + converted + redirect) == 1);
  const std::string not_a_checkpoint = read_binary_file(err);
  CHECK(not_a_checkpoint.find("readme.txt: neither a PyTorch checkpoint") != std::string::npos);
  CHECK(std::count(not_a_checkpoint.begin(), not_a_checkpoint.end(), '\n') == 1);
}
