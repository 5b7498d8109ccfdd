// mcdl_features and its pieces: the .npy writer against numpy 1.24's bytes, the feature
// extraction against the backbone's forward pass on the same preprocessed images, the backbone
// loaders (weights file, --config, training checkpoint), the errors that name the bad file, and
// one end-to-end run of the ./mcdl_features binary (built before the tests by `make test`).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "data/decode.h"
#include "data/resize.h"
#include "data/transforms.h"
#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "layers/backbone_file.h"
#include "layers/simgcd_model.h"
#include "mcdl/run/trained_model.h"
#include "mcdl/evaluation/features.h"
#include "tests/bf16_support.h"
#include "tests/io/checkpoint_builders.h"
#include "tests/tool_binary.h"

using namespace mcdl;
using mcdl::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const char* kSpec = "img=16,patch=4,chans=3,dim=8,depth=2,heads=2";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// A random RGB image of the given size as a PNG.
void write_random_png(const std::string& path, int64_t height, int64_t width, uint64_t seed) {
  fs::create_directories(fs::path(path).parent_path());
  Image image(height, width, 3);
  RandomStream stream(seed, 0);
  for (uint8_t& p : image.pixels) p = static_cast<uint8_t>(stream.uniform_float() * 256.0f);
  write_png(path, image);
}

VisionTransformer tiny_backbone(uint64_t seed) {
  VisionTransformer backbone(parse_model_config(kSpec).backbone);
  backbone.initialize(seed);
  return backbone;
}

// The test transform written out step by step (data/transforms.h): the reference the
// extraction must match.
Tensor preprocess(const std::vector<std::string>& paths, int64_t size) {
  const int64_t per_image = 3 * size * size;
  Tensor batch = empty({static_cast<int64_t>(paths.size()), 3, size, size});
  for (size_t i = 0; i < paths.size(); ++i) {
    const Image resized = resize_shorter_side(decode_image(paths[i], 3), static_cast<int64_t>(size / 0.875));
    to_tensor_normalize(center_crop(resized, size, size), Normalization::imagenet(),
                        batch.data<float>() + static_cast<int64_t>(i) * per_image);
  }
  return batch;
}

void check_same_values(const Tensor& got, const Tensor& want, double tolerance) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element ", i);
    CHECK(std::abs(g[i] - w[i]) <= tolerance);
  }
}

doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

struct Outcome {
  int exit_code;
  std::string out, err;
};

// __FILE__ is relative to the repository root, where the tests run.
Outcome run_tool(const TempDir& scratch, const std::string& arguments) {
  const fs::path tool = testing::tool_binary(
      "mcdl_features", fs::absolute(fs::path(__FILE__)).parent_path().parent_path().parent_path().string());
  REQUIRE_MESSAGE(fs::exists(tool), tool.string() << " is missing: build it first (make mcdl_features)");
  const std::string out = scratch.file("stdout.txt"), err = scratch.file("stderr.txt");
  const std::string command = "OMP_NUM_THREADS=2 '" + tool.string() + "' " + arguments + " > '" + out + "' 2> '" +
                              err + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), slurp(out), slurp(err)};
}

}  // namespace

TEST_CASE("npy: headers are numpy 1.24's numpy.save bytes") {
  // Printed by numpy 1.24.2: np.save(f, np.zeros(shape, dtype)), the first 10 + header-length bytes.
  const std::string pad58(58, ' '), pad60(60, ' '), pad51(51, ' ');
  CHECK(npy_header(DType::f32, {3, 4}) ==
        std::string("\x93NUMPY\x01\x00v\x00", 10) + "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" +
            pad58 + "\n");
  CHECK(npy_header(DType::i64, {2, 5}) ==
        std::string("\x93NUMPY\x01\x00v\x00", 10) + "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 5), }" +
            pad58 + "\n");
  CHECK(npy_header(DType::f32, {7}) ==
        std::string("\x93NUMPY\x01\x00v\x00", 10) + "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }" +
            pad60 + "\n");
  CHECK(npy_header(DType::f32, {123456, 768}) ==
        std::string("\x93NUMPY\x01\x00v\x00", 10) +
            "{'descr': '<f4', 'fortran_order': False, 'shape': (123456, 768), }" + pad51 + "\n");
  for (const Shape& shape : {Shape{3, 4}, Shape{0, 8}, Shape{1, 1}, Shape{99999, 12345}, Shape{5}}) {
    CAPTURE(shape_str(shape));
    CHECK(npy_header(DType::f32, shape).size() % 64 == 0);
  }
  CHECK_THROWS_WITH(npy_header(DType::f64, {2, 2}), doctest::Contains("no .npy element type for f64"));
}

TEST_CASE("npy: write_npy writes header then row-major data; read_npy reads it back") {
  TempDir scratch("mcdl_features_npy");
  const Tensor floats = from_vector<float>({1.5f, -2.0f, 0.25f, 3.0f, 1e-8f, -0.0f}, {2, 3});
  write_npy(scratch.file("f.npy"), floats);
  const std::string bytes = slurp(scratch.file("f.npy"));
  REQUIRE(bytes.size() == 128 + 6 * 4);
  CHECK(bytes.substr(0, 128) == npy_header(DType::f32, {2, 3}));
  CHECK(bytes.substr(128, 4) == std::string("\x00\x00\xc0\x3f", 4));  // 1.5f little-endian
  const Tensor back = read_npy(scratch.file("f.npy"));
  CHECK(back.dtype() == DType::f32);
  CHECK(back.shape() == Shape{2, 3});
  CHECK(back.to_vector<float>() == floats.to_vector<float>());
  CHECK_FALSE(fs::exists(scratch.file("f.npy.tmp")));

  const Tensor ints = from_vector<int64_t>({-1, 0, int64_t{1} << 40, 7}, {4, 1});
  write_npy(scratch.file("i.npy"), ints);
  const Tensor ints_back = read_npy(scratch.file("i.npy"));
  CHECK(ints_back.dtype() == DType::i64);
  CHECK(ints_back.shape() == Shape{4, 1});
  CHECK(ints_back.to_vector<int64_t>() == ints.to_vector<int64_t>());

  write_npy(scratch.file("empty.npy"), empty({0, 5}));
  CHECK(read_npy(scratch.file("empty.npy")).shape() == Shape{0, 5});
  CHECK_THROWS_WITH(write_npy(scratch.file("d.npy"), zeros({2, 2}, DType::f64)),
                    doctest::Contains("no .npy element type for f64"));
  CHECK_THROWS_WITH(write_npy(scratch.file("no/such/dir/x.npy"), floats), doctest::Contains("no/such/dir/x.npy.tmp"));
}

TEST_CASE("npy: read_npy rejects what it cannot read, naming the file") {
  TempDir scratch("mcdl_features_npy_bad");
  const std::string good = npy_header(DType::f32, {2, 2}) + std::string(16, '\0');
  auto with_dict = [](const std::string& dict) {
    std::string header = std::string("\x93NUMPY\x01\x00", 8);
    header += {static_cast<char>(dict.size() & 0xff), static_cast<char>(dict.size() >> 8)};
    return header + dict;
  };
  const struct {
    const char* name;
    std::string bytes, message;
  } cases[] = {
      {"magic.npy", "PK\x03\x04 not numpy", "not a .npy file"},
      {"version.npy", std::string("\x93NUMPY\x03\x00\x10\x00", 10), "format version 3.0"},
      {"short.npy", good.substr(0, 100), "the header says 118 bytes"},
      {"data.npy", good.substr(0, good.size() - 4), "needs 16 data bytes, the file has 12"},
      {"f8.npy", with_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n") + std::string(8, '\0'),
       "element type '<f8'"},
      {"fortran.npy", with_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1), }\n") + std::string(4, '\0'),
       "Fortran-order arrays are not supported"},
      {"dict.npy", with_dict("{'descr': '<f4', 'shape': [1], }\n"), "malformed header"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    write_bytes(scratch.file(c.name), c.bytes);
    CHECK_THROWS_WITH(read_npy(scratch.file(c.name)), contains(c.message));
    CHECK_THROWS_WITH(read_npy(scratch.file(c.name)), contains(scratch.file(c.name)));
  }
  CHECK_THROWS_WITH(read_npy(scratch.file("missing.npy")), doctest::Contains("cannot open"));
}

TEST_CASE("features: image listing walks directories recursively, sorted, image files only") {
  TempDir scratch("mcdl_features_listing");
  write_random_png(scratch.file("dir/b.png"), 4, 4, 1);
  write_random_png(scratch.file("dir/a/z.PNG"), 4, 4, 2);
  write_random_png(scratch.file("dir/a/c.png"), 4, 4, 3);
  write_bytes(scratch.file("dir/notes.txt"), "not an image");
  write_random_png(scratch.file("single.image"), 4, 4, 4);  // named explicitly: taken whatever its extension
  const std::vector<std::string> files = list_image_files({scratch.file("single.image"), scratch.file("dir")});
  CHECK(files == std::vector<std::string>{scratch.file("single.image"), scratch.file("dir/a/c.png"), scratch.file("dir/a/z.PNG"),
                                          scratch.file("dir/b.png")});
  fs::create_directories(scratch.file("empty"));
  write_bytes(scratch.file("empty/readme.md"), "x");
  CHECK_THROWS_WITH(list_image_files({scratch.file("empty")}), contains(scratch.file("empty") + ": no image files"));
  CHECK_THROWS_WITH(list_image_files({scratch.file("nope.jpg")}),
                    contains(scratch.file("nope.jpg") + ": no such file or directory"));
}

TEST_CASE("features: extract_features = backbone.forward on the test transform, L2-normalised unless raw") {
  TempDir scratch("mcdl_features_extract");
  // Sizes around the resize (int(16/0.875) = 18): larger, smaller, square and odd crops.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{30, 20}, {18, 18}, {12, 40}, {64, 33}, {17, 25}};
  std::vector<std::string> paths;
  for (size_t i = 0; i < sizes.size(); ++i) {
    paths.push_back(scratch.file("img" + std::to_string(i) + ".png"));
    write_random_png(paths.back(), sizes[i].first, sizes[i].second, 10 + i);
  }
  VisionTransformer backbone = tiny_backbone(3);
  const Tensor expected_raw = [&] {
    NoGradGuard no_grad;
    return backbone.forward(preprocess(paths, 16));
  }();

  // test_transform_file is the step-by-step transform.
  CHECK(from_vector(test_transform_file(paths[2], 3, 16), {1, 3, 16, 16}).to_vector<float>() ==
        preprocess({paths[2]}, 16).to_vector<float>());

  FeatureOptions options;
  options.image_size = 16;
  options.batch_size = 2;  // three batches, the last one partial
  options.normalise = false;
  std::vector<int64_t> progress;
  options.on_batch = [&](int64_t done) { progress.push_back(done); };
  const Tensor raw = extract_features(backbone, paths, options);
  CHECK(progress == std::vector<int64_t>{2, 4, 5});
  CHECK(raw.device() == Device::cpu());
  CHECK_FALSE(raw.requires_grad());
  check_same_values(raw, expected_raw, 1e-5);

  options.normalise = true;
  options.on_batch = nullptr;
  const Tensor unit = extract_features(backbone, paths, options);
  check_same_values(unit, l2_normalize(expected_raw), 1e-6);
  const std::vector<float> u = unit.to_vector<float>();
  for (int64_t row = 0; row < unit.size(0); ++row) {
    double norm = 0;
    for (int64_t j = 0; j < unit.size(1); ++j) norm += std::pow(u[static_cast<size_t>(row * unit.size(1) + j)], 2);
    CHECK(std::sqrt(norm) == doctest::Approx(1.0).epsilon(1e-6));
  }

  // Another crop size: the position embedding is interpolated, as for any input size.
  options.image_size = 24;
  const Tensor expected_24 = [&] {
    NoGradGuard no_grad;  // resizing pos_embed is not differentiable
    return l2_normalize(backbone.forward(preprocess(paths, 24)));
  }();
  check_same_values(extract_features(backbone, paths, options), expected_24, 1e-6);
  options.image_size = 18;
  CHECK_THROWS_WITH(extract_features(backbone, paths, options),
                    doctest::Contains("image size 18 is not a positive multiple of the backbone's patch size 4"));

  // A missing and a corrupt image: the error names the file.
  options.image_size = 16;
  write_bytes(scratch.file("corrupt.png"), "\x89PNG\r\n\x1a\n but nothing after");
  CHECK_THROWS_WITH(extract_features(backbone, {paths[0], scratch.file("corrupt.png")}, options),
                    contains(scratch.file("corrupt.png")));
  CHECK_THROWS_WITH(extract_features(backbone, {paths[0], paths[1], scratch.file("gone.png")}, options),
                    contains(scratch.file("gone.png")));
}

TEST_CASE("features: backbones from a weights file, --config, and a training checkpoint") {
  TempDir scratch("mcdl_features_loading");
  VisionTransformer backbone = tiny_backbone(5);
  const std::map<std::string, Tensor> want = backbone.state_dict();
  auto check_loaded = [&](VisionTransformer loaded) {
    CHECK(loaded.config() == backbone.config());
    for (const auto& [name, tensor] : loaded.state_dict()) {
      CAPTURE(name);
      CHECK(tensor.to_vector<float>() == want.at(name).to_vector<float>());
    }
  };

  save_backbone_file(scratch.file("weights.safetensors"), backbone);
  check_loaded(load_backbone_weights(scratch.file("weights.safetensors")));
  CHECK_THROWS_WITH(load_backbone_weights(scratch.file("missing.safetensors")),
                    contains("weights file " + scratch.file("missing.safetensors") + " does not exist"));

  // Without metadata the file needs --config; a spec that does not fit is an error naming the file.
  save_safetensors(scratch.file("bare.safetensors"), want);
  CHECK_THROWS_WITH(load_backbone_weights(scratch.file("bare.safetensors")),
                    doctest::Contains("has no model configuration"));
  check_loaded(load_backbone_weights(scratch.file("bare.safetensors"), kSpec));
  CHECK_THROWS_WITH(load_backbone_weights(scratch.file("bare.safetensors"), "img=16,patch=4,dim=8,depth=3,heads=2"),
                    contains("weights file " + scratch.file("bare.safetensors") + " does not fit --config"));

  // An unconverted PyTorch checkpoint, with or without --config, names the conversion to run.
  const std::string pth =
      (std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures/checkpoints/vit_fixture.pth").string();
  for (const std::string spec : {"", kSpec}) {
    CHECK_THROWS_WITH(load_backbone_weights(pth, spec),
                      contains("weights file " + pth + " is a PyTorch checkpoint (torch.save's format); the engine "
                               "reads its own safetensors weights: convert it first with ./mcdl_convert " + pth));
  }

  // A training checkpoint: "model.<name>" for backbone and head, plus other state.
  ModelConfig config = parse_model_config(std::string(kSpec) + ",classes=3,head_hidden=8,head_bottleneck=4");
  SimGCDModel model(config);
  model.initialize(1);
  model.backbone.load_parameters(want);
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, tensor] : model.state_dict()) tensors["model." + name] = tensor;
  tensors["optimizer.step"] = zeros({1});
  fs::create_directories(scratch.file("run/checkpoints"));
  save_safetensors(scratch.file("run/checkpoints/last.safetensors"), tensors,
                   {{"model_config", model_config_to_json(config)}, {"epochs_completed", "1"}});
  check_loaded(load_checkpoint_backbone(scratch.file("run")));
  check_loaded(load_checkpoint_backbone(scratch.file("run/checkpoints/last.safetensors")));
  CHECK_THROWS_WITH(load_checkpoint_backbone(scratch.file("nowhere")),
                    contains("checkpoint " + scratch.file("nowhere") + " does not exist"));
  CHECK_THROWS_WITH(load_checkpoint_backbone(scratch.file("weights.safetensors")),
                    doctest::Contains("has no 'model_config' entry"));
}

TEST_CASE("mcdl_features: the binary writes the .npy and the image list, errors exit 1 naming the file") {
  TempDir scratch("mcdl_features_tool");
  write_random_png(scratch.file("images/cats/1.png"), 20, 30, 21);
  write_random_png(scratch.file("images/cats/0.png"), 40, 16, 22);
  write_random_png(scratch.file("images/dogs/x.png"), 25, 25, 23);
  write_bytes(scratch.file("images/dogs/labels.csv"), "not an image");
  VisionTransformer backbone = tiny_backbone(9);
  save_backbone_file(scratch.file("w.safetensors"), backbone);

  const Outcome help = run_tool(scratch, "--help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.rfind("usage: mcdl_features", 0) == 0);

  const Outcome ok = run_tool(scratch, "--weights '" + scratch.file("w.safetensors") + "' --device cpu --batch-size 2 '" +
                                           scratch.file("images") + "' -o '" + scratch.file("out/f.npy") + "'");
  // The output directory does not exist: a clear error first.
  CHECK(ok.exit_code == 1);
  CHECK(ok.err.find(scratch.file("out/f.npy")) != std::string::npos);

  const Outcome run = run_tool(scratch, "--weights '" + scratch.file("w.safetensors") + "' --device cpu --batch-size 2 '" +
                                            scratch.file("images") + "' -o '" + scratch.file("f.npy") + "'");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("3 images, 8 features each (L2-normalised") != std::string::npos);
  const std::vector<std::string> images = {scratch.file("images/cats/0.png"), scratch.file("images/cats/1.png"),
                                           scratch.file("images/dogs/x.png")};
  CHECK(slurp(scratch.file("f.txt")) == images[0] + "\n" + images[1] + "\n" + images[2] + "\n");
  const Tensor written = read_npy(scratch.file("f.npy"));
  CHECK(written.shape() == Shape{3, 8});
  FeatureOptions options;
  options.image_size = 16;
  options.batch_size = 2;
  check_same_values(written, extract_features(backbone, images, options), 1e-6);

  // Bad usage exits 2; a missing weights file and a corrupt image exit 1 with one line.
  const Outcome usage = run_tool(scratch, "'" + scratch.file("images") + "' -o '" + scratch.file("g.npy") + "'");
  CHECK(usage.exit_code == 2);
  CHECK(usage.err.find("give either --weights FILE or --checkpoint RUN_DIR") != std::string::npos);
  CHECK(run_tool(scratch, "--weights a --checkpoint b x -o y.npy").exit_code == 2);
  CHECK(run_tool(scratch, "--weights a --batch-size 0 x -o y.npy").exit_code == 2);
  CHECK(run_tool(scratch, "--weights a x -o list.txt").exit_code == 2);

  const Outcome no_weights = run_tool(scratch, "--weights '" + scratch.file("none.safetensors") + "' --device cpu '" +
                                                   scratch.file("images") + "' -o '" + scratch.file("g.npy") + "'");
  CHECK(no_weights.exit_code == 1);
  CHECK(no_weights.err.rfind("error: weights file " + scratch.file("none.safetensors") + " does not exist", 0) == 0);
  CHECK(std::count(no_weights.err.begin(), no_weights.err.end(), '\n') == 1);

  write_bytes(scratch.file("images/dogs/broken.jpg"), "\xff\xd8\xff garbage");
  const Outcome corrupt = run_tool(scratch, "--weights '" + scratch.file("w.safetensors") + "' --device cpu '" +
                                                scratch.file("images") + "' -o '" + scratch.file("g.npy") + "'");
  CHECK(corrupt.exit_code == 1);
  CHECK(corrupt.err.find(scratch.file("images/dogs/broken.jpg")) != std::string::npos);
  CHECK(std::count(corrupt.err.begin(), corrupt.err.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(scratch.file("g.npy")));
}

TEST_CASE("mcdl_features: $MCDL_BF16_GELU picks the frozen blocks' bf16 GELU, erf by default (and on the CPU for cudnn)") {
  if (!testing::cpu_runs_bf16_products()) return;
  TempDir scratch("mcdl_features_gelu");
  write_random_png(scratch.file("images/a.png"), 20, 30, 31);
  write_random_png(scratch.file("images/b.png"), 24, 24, 32);
  VisionTransformer backbone = tiny_backbone(10);
  // The frozen block's hidden units in GELU's tail (pre-activations near -2.8), where the tanh
  // form differs from erf by several bf16 steps.
  backbone.blocks[0].mlp.fc1.bias = full(backbone.blocks[0].mlp.fc1.bias.shape(), -2.8);
  save_backbone_file(scratch.file("w.safetensors"), backbone);
  auto features = [&](const char* gelu, const std::string& name) {
    if (gelu) ::setenv("MCDL_BF16_GELU", gelu, 1);
    const Outcome outcome = run_tool(scratch, "--weights '" + scratch.file("w.safetensors") +
                                                  "' --device cpu --precision bf16 --raw '" + scratch.file("images") +
                                                  "' -o '" + scratch.file(name) + "'");
    ::unsetenv("MCDL_BF16_GELU");
    return outcome;
  };
  REQUIRE(features(nullptr, "default.npy").exit_code == 0);
  REQUIRE(features("erf", "erf.npy").exit_code == 0);
  REQUIRE(features("tanh", "tanh.npy").exit_code == 0);
  REQUIRE(features("cudnn", "cudnn.npy").exit_code == 0);  // on the CPU, the erf form inside oneDNN's product
  CHECK(slurp(scratch.file("erf.npy")) == slurp(scratch.file("default.npy")));
  CHECK(slurp(scratch.file("cudnn.npy")) == slurp(scratch.file("erf.npy")));
  CHECK(slurp(scratch.file("tanh.npy")) != slurp(scratch.file("erf.npy")));
  const Outcome bad = features("exact", "bad.npy");
  CHECK(bad.exit_code == 1);
  CHECK(bad.err == "error: MCDL_BF16_GELU: expected erf, tanh or cudnn, got 'exact'; unset it for the default\n");
}

TEST_CASE("mcdl_features: a bad $MCDL_CUDA_GRAPHS ends in one line naming the choices") {
  TempDir scratch("mcdl_features_graphs");
  write_random_png(scratch.file("images/a.png"), 20, 30, 33);
  VisionTransformer backbone = tiny_backbone(10);
  save_backbone_file(scratch.file("w.safetensors"), backbone);
  ::setenv("MCDL_CUDA_GRAPHS", "on", 1);
  const Outcome bad = run_tool(scratch, "--weights '" + scratch.file("w.safetensors") + "' --device cpu --raw '" +
                                            scratch.file("images") + "' -o '" + scratch.file("g.npy") + "'");
  ::unsetenv("MCDL_CUDA_GRAPHS");
  CHECK(bad.exit_code == 1);
  CHECK(bad.err == "error: MCDL_CUDA_GRAPHS: expected off or frozen, got 'on'; unset it for the default\n");
  CHECK_FALSE(fs::exists(scratch.file("g.npy")));
}
