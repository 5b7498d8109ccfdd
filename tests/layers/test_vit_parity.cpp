// PyTorch parity of the ViT backbone and the SimGCD head (fixtures from
// tools/make_vit_fixtures.py: DINO's architecture at 32x32, patch 8, width 48, depth 2, 3 heads,
// random weights; references computed by PyTorch in float64): CLS features, head outputs, the
// interpolated position embedding and features at 40x40, and the gradients of a fixed loss with
// grad_from_block = 1, on the CPU and on the (emulated) CUDA device.
//
// Tolerances: f32 runs use rtol 1e-5 with atol 1e-5·max|ref| (float rounding of sums of up to
// 192 terms through 2 blocks); the f64 CPU run agrees with PyTorch's float64 to 1e-10.
#include <doctest/doctest.h>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "layers/pos_embed.h"
#include "layers/simgcd_model.h"
#include "tests/layers/vit_test_util.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

SimGCDModel fixture_model(Device device, DType dtype) {
  const VitFixture& fx = vit_fixture();
  SimGCDModel model(fx.config);
  model.load_parameters(fx.weights);
  model.set_grad_from_block(1);
  model.to(dtype);
  model.to(device);
  return model;
}

Tensor input(const std::string& name, Device device, DType dtype) {
  return vit_fixture().reference.at(name).to(dtype).to(device);
}

// The fixture's loss: mean(projection²) + cross_entropy(logits / 0.1, targets).
Tensor fixture_loss(const HeadOutput& out, Device device) {
  Tensor targets = vit_fixture().reference.at("targets").to(device);
  return mean(pow(out.projection, 2.0)) + cross_entropy(div(out.logits, 0.1), targets);
}

void check_parity(Device device, DType dtype, double rtol, double atol_scale) {
  const auto& ref = vit_fixture().reference;
  SimGCDModel model = fixture_model(device, dtype);
  auto close = [&](const std::string& what, const Tensor& got, const std::string& key) {
    CHECK(got.device() == device);
    check_close_scaled(what + " on " + device.str(), got, ref.at(key), rtol, atol_scale);
  };

  {
    NoGradGuard no_grad;
    close("features at 40x40", model.backbone.forward(input("images_40", device, dtype)), "features_40");
    close("pos_embed at 40x40", interpolate_pos_encoding(model.backbone.pos_embed, 40, 40, 8), "pos_embed_40");
  }

  Tensor features = model.backbone.forward(input("images_32", device, dtype));
  HeadOutput out = model.head.forward(features);
  close("features at 32x32", features, "features_32");
  close("projection", out.projection, "projection");
  close("logits", out.logits, "logits");
  Tensor loss = fixture_loss(out, device);
  close("loss", loss, "loss");
  loss.backward();

  int trained = 0;
  for (const NamedParameter& p : model.named_parameters()) {
    auto it = ref.find("grad." + p.name);
    if (it == ref.end()) {
      INFO(p.name);
      CHECK_FALSE(p.tensor.grad().defined());  // frozen: no gradient at all
      continue;
    }
    ++trained;
    close("gradient of " + p.name, p.tensor.grad(), it->first);
  }
  CHECK(trained == 19);  // the 12 tensors of blocks.1, 6 head MLP tensors and weight_v
}

}  // namespace

TEST_CASE("vit parity: fixture config comes from the weights file's metadata") {
  const ModelConfig& c = vit_fixture().config;
  CHECK(c.backbone.img_size == 32);
  CHECK(c.backbone.patch_size == 8);
  CHECK(c.backbone.embed_dim == 48);
  CHECK(c.backbone.depth == 2);
  CHECK(c.backbone.num_heads == 3);
  CHECK(c.head.num_classes == 10);
  CHECK(c.head.hidden_dim == 64);
  CHECK(c.head.bottleneck_dim == 32);
}

TEST_CASE("vit parity: CPU f32 matches PyTorch (features, head, interpolation, gradients)") {
  check_parity(Device::cpu(), DType::f32, 1e-5, 1e-5);
}

TEST_CASE("vit parity: CPU f64 matches PyTorch's float64 to 1e-10") {
  check_parity(Device::cpu(), DType::f64, 1e-10, 1e-10);
}

TEST_CASE("vit parity: CUDA f32 matches PyTorch (features, head, interpolation, gradients)") {
  check_parity(Device::cuda(), DType::f32, 1e-5, 1e-5);
}
