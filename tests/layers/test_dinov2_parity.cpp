// PyTorch parity of the DINOv2 backbones (fixtures from tools/make_dinov2_fixtures.py: a small
// DinoVisionTransformer with random weights, saved as torch.save state dicts with the official
// names and as Hugging Face Dinov2Model safetensors, with and without 4 registers; references in
// float64). The files go through the converter here; the CLS features of two photos at 28 px
// (the stored 5x5 grid downsampled to 4x4) and 42 px (6x6) must reach cosine >= 0.99999 and
// relative error <= 1e-5 in f32 on the CPU and the emulated CUDA device, 1e-10 in f64. The
// position-embedding interpolation is compared with PyTorch's own at DINOv2's real grid: the
// 37x37 table to 224x224 (16x16) and to 280x210 (20x15).
#include <doctest/doctest.h>

#include <cmath>
#include <tuple>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "io/safetensors.h"
#include "layers/backbone_file.h"
#include "layers/pos_embed.h"
#include "layers/vision_transformer.h"
#include "tests/gradcheck.h"
#include "tests/io/checkpoint_builders.h"
#include "tests/layers/dinov2_fixture.h"
#include "tests/layers/vit_test_util.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

struct Agreement {
  double min_cosine = 1, max_relative = 0;
};

// Row by row: cosine similarity and ‖got − ref‖ / ‖ref‖.
Agreement agreement(const Tensor& got, const Tensor& ref) {
  REQUIRE(got.shape() == ref.shape());
  const std::vector<double> g = got.to_vector<double>(), r = ref.to_vector<double>();
  const auto width = static_cast<size_t>(ref.size(1));
  Agreement out;
  for (size_t row = 0; row * width < r.size(); ++row) {
    double dot = 0, gg = 0, rr = 0, diff = 0;
    for (size_t i = row * width; i < (row + 1) * width; ++i) {
      dot += g[i] * r[i];
      gg += g[i] * g[i];
      rr += r[i] * r[i];
      diff += (g[i] - r[i]) * (g[i] - r[i]);
    }
    out.min_cosine = std::min(out.min_cosine, dot / std::sqrt(gg * rr));
    out.max_relative = std::max(out.max_relative, std::sqrt(diff / rr));
  }
  return out;
}

void check_features(const std::string& file, int64_t registers, Device device, DType dtype, double max_relative) {
  const BackboneConversion converted = convert_dinov2_fixture(file, registers);
  VisionTransformer vit(dinov2_fixture_config(registers));
  vit.load_parameters(converted.tensors);
  vit.to(dtype);
  vit.to(device);
  NoGradGuard no_grad;
  const std::string suffix = registers ? "_reg4" : "";
  for (int size : {28, 42}) {
    const Tensor images = dinov2_reference().at("images_" + std::to_string(size)).to(dtype).to(device);
    const Tensor features = vit.forward(images);
    CHECK(features.device() == device);
    const Agreement a = agreement(features, dinov2_reference().at("features" + suffix + "_" + std::to_string(size)));
    MESSAGE(file, " at ", size, " px on ", device.str(), (dtype == DType::f64 ? " f64" : " f32"),
            ": cosine >= ", a.min_cosine, ", relative error <= ", a.max_relative);
    CHECK(a.min_cosine >= 1 - 1e-5);
    CHECK(a.max_relative <= max_relative);
  }
}

}  // namespace

TEST_CASE("dinov2 parity: both official layouts convert to the same tensors, mask token dropped by name") {
  for (int64_t registers : {0, 4}) {
    const std::string stem = registers ? "dinov2_reg4" : "dinov2";
    const BackboneConversion official = convert_dinov2_fixture(stem + ".pth", registers);
    const BackboneConversion hf = convert_dinov2_fixture(stem + "_hf.safetensors", registers);
    CHECK(official.warnings.empty());
    CHECK(hf.warnings.empty());
    REQUIRE(official.tensors.size() == static_cast<size_t>(4 + (registers ? 1 : 0) + 14 * 2 + 2));
    REQUIRE(hf.tensors.size() == official.tensors.size());
    for (const auto& [name, tensor] : official.tensors) {
      INFO(name);
      REQUIRE(hf.tensors.count(name) == 1);
      CHECK(max_abs_diff(hf.tensors.at(name), tensor) == 0);
    }
    REQUIRE(official.notes.size() == 1);
    CHECK(official.notes[0] ==
          "dropped the mask token 'mask_token' f32[1, 24] (DINOv2's masked-image pretraining; not used by features)");
    REQUIRE(hf.notes.size() == 2);
    CHECK(hf.notes[0] ==
          "dropped the mask token 'embeddings.mask_token' f32[1, 24] (DINOv2's masked-image "
          "pretraining; not used by features)");
    CHECK(hf.notes[1].find("Hugging Face Dinov2Model names to DINOv2's") != std::string::npos);
  }
}

TEST_CASE("dinov2 parity: CLS features match PyTorch at 28 and 42 px, with and without registers (CPU f32, f64)") {
  for (const char* file : {"dinov2.pth", "dinov2_hf.safetensors"})
    check_features(file, 0, Device::cpu(), DType::f32, 1e-5);
  for (const char* file : {"dinov2_reg4.pth", "dinov2_reg4_hf.safetensors"})
    check_features(file, 4, Device::cpu(), DType::f32, 1e-5);
  check_features("dinov2.pth", 0, Device::cpu(), DType::f64, 1e-10);
  check_features("dinov2_reg4.pth", 4, Device::cpu(), DType::f64, 1e-10);
}

TEST_CASE("dinov2 parity: CLS features match PyTorch through the emulated CUDA device") {
  check_features("dinov2.pth", 0, Device::cuda(), DType::f32, 1e-5);
  check_features("dinov2_reg4_hf.safetensors", 4, Device::cuda(), DType::f32, 1e-5);
}

TEST_CASE("dinov2 parity: the converted file describes its model (config in the metadata)") {
  TempDir dir("mcdl_test_dinov2");
  const VitConfig config = dinov2_fixture_config(4);
  save_dino_backbone(dir.file("reg4.safetensors"), convert_dinov2_fixture("dinov2_reg4.pth", 4), config);
  const BackboneFile file = load_backbone_file(dir.file("reg4.safetensors"));
  CHECK(file.config.backbone == config);
  VisionTransformer vit(file.config.backbone);
  vit.load_parameters(file.tensors);
  NoGradGuard no_grad;
  const Agreement a =
      agreement(vit.forward(dinov2_reference().at("images_28")), dinov2_reference().at("features_reg4_28"));
  CHECK(a.max_relative <= 1e-5);
}

TEST_CASE("dinov2 parity: position-embedding interpolation equals PyTorch's at 224x224 and 280x210") {
  const auto& ref = dinov2_reference();
  const Tensor table = ref.at("pos_table");  // [1, 1370, 4]: DINOv2's 37x37 grid and CLS
  for (const auto& [name, h, w] : {std::tuple{"224", 224, 224}, std::tuple{"280x210", 280, 210}}) {
    INFO(name);
    const std::string key = std::string("pos_") + name;
    // Double precision against PyTorch's float64: the same arithmetic.
    check_close_scaled(key + " f64", interpolate_pos_encoding(table.to(DType::f64), h, w, 14), ref.at(key + "_f64"),
                       1e-13, 1e-13);
    // f32 against PyTorch's float32 (DINOv2 resizes pos_embed.float()): float rounding only.
    const Tensor f32_ref = ref.at(key + "_f32");
    check_close_scaled(key + " f32, host path", interpolate_pos_encoding(table, h, w, 14), f32_ref, 1e-6, 1e-6);
    // The graph path (a trainable pos_embed), on both devices.
    for (Device device : {Device::cpu(), Device::cuda()}) {
      const Tensor trainable = table.to(device).set_requires_grad(true);
      const Tensor resized = interpolate_pos_encoding(trainable, h, w, 14);
      CHECK(resized.requires_grad());
      check_close_scaled(key + " f32, graph path on " + device.str(), resized.detach(), f32_ref, 1e-6, 1e-6);
    }
  }
}
