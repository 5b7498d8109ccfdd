// Shared helpers of the layer tests: the PyTorch fixtures (tools/make_vit_fixtures.py) and a
// tolerance check scaled to the reference's magnitude.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "io/safetensors.h"
#include "layers/vit_config.h"

namespace mcdl::testing {

// A SimGCD model small enough for the emulator: a three-block ViT on 32 px images with a narrow
// head, for the tests of the frozen blocks' bf16 path.
inline ModelConfig small_simgcd_config() {
  ModelConfig config;
  config.backbone = parse_model_config("img=32,patch=8,dim=48,depth=3,heads=3").backbone;
  config.head.num_classes = 4;
  config.head.hidden_dim = 32;
  config.head.bottleneck_dim = 16;
  return config;
}

// tests/fixtures/vit/<name>; __FILE__ is relative to the repository root, where tests run.
inline std::string vit_fixture_path(const std::string& name) {
  namespace fs = std::filesystem;
  return (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "vit" / name).string();
}

// The small DINO ViT + SimGCD head of the fixtures: weights, their config, and the reference.
struct VitFixture {
  ModelConfig config;
  std::map<std::string, Tensor> weights;
  std::map<std::string, Tensor> reference;
};

inline const VitFixture& vit_fixture() {
  static const VitFixture fixture = [] {
    SafetensorsFile weights = load_safetensors(vit_fixture_path("weights.safetensors"));
    SafetensorsFile reference = load_safetensors(vit_fixture_path("reference.safetensors"));
    return VitFixture{model_config_from_json(weights.metadata.at("config")), weights.tensors, reference.tensors};
  }();
  return fixture;
}

// |got − ref| ≤ atol + rtol·|ref| element-wise with atol = atol_scale·max|ref| (absolute
// errors of float sums grow with the values' magnitude, not with each element's).
inline void check_close_scaled(const std::string& what, const Tensor& got, const Tensor& ref, double rtol = 1e-5,
                               double atol_scale = 1e-5) {
  INFO(what);
  REQUIRE(got.defined());
  REQUIRE(got.numel() == ref.numel());
  const std::vector<double> g = got.to_vector<double>(), r = ref.to_vector<double>();
  double scale = 0;
  for (double v : r) scale = std::max(scale, std::abs(v));
  const double atol = atol_scale * scale;
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double excess = std::abs(g[i] - r[i]) - (atol + rtol * std::abs(r[i]));
    if (!(excess <= worst) || std::isnan(g[i])) {
      worst = std::isnan(g[i]) ? INFINITY : excess;
      worst_at = i;
    }
  }
  INFO("worst element ", worst_at, ": got ", g[worst_at], ", expected ", r[worst_at], " (atol ", atol, ", rtol ", rtol,
       ")");
  CHECK(worst <= 0);
}

}  // namespace mcdl::testing
