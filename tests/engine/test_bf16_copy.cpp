// Bf16Copy (engine/ops/inference.h): a frozen weight is rounded to bf16 once and the copy kept;
// it is made again after any write to the weight's storage or for another tensor, so a kept copy
// is never stale. And Storage::writes, which it relies on, counts writable pointers only.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/ops.h"
#include "engine/settings.h"
#include "kernels/cuda/runtime.h"
#include "kernels/emu/profile_ranges.h"
#include "layers/linear.h"
#include "layers/simgcd_model.h"
#include "tests/bf16_support.h"
#include "tests/gradcheck.h"
#include "tests/layers/vit_test_util.h"

using namespace mcdl;
using namespace mcdl::testing;
using Names = std::vector<std::string>;

namespace {

// Writes host values into t's own buffer, as an optimizer step or a load writes a parameter.
void overwrite(Tensor& t, const Tensor& host_values) {
  if (t.device().is_cpu())
    std::memcpy(t.raw_data(), host_values.raw_data(), t.nbytes());
  else
    cuda::copy_host_to_device(t.raw_data(), host_values.raw_data(), t.nbytes());
}

std::vector<float> rounded(const Tensor& t) { return t.to(DType::bf16).to(DType::f32).to_vector<float>(); }

}  // namespace

TEST_CASE("storage: only writable pointers count as writes") {
  Tensor t = zeros({4});
  const uint64_t before = t.storage()->writes();
  const Tensor& read_only = t;
  (void)read_only.data<float>();
  (void)read_only.ptr<float>();
  (void)read_only.raw_data();
  (void)t.to_vector<float>();
  CHECK(t.storage()->writes() == before);
  (void)t.data<float>();
  CHECK(t.storage()->writes() == before + 1);
  (void)t.ptr<float>();
  (void)t.raw_data();
  CHECK(t.storage()->writes() == before + 3);
}

TEST_CASE("bf16 copy: kept while the source is unchanged, made again after a write or for another tensor") {
  for (const Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device);
    Tensor weight = random_tensor({6, 5}, 1, -1, 1, DType::f32).to(device);
    Bf16Copy cache;
    const Tensor first = cache.of(weight);
    CHECK(first.dtype() == DType::bf16);
    CHECK(first.to(DType::f32).to_vector<float>() == rounded(weight));
    CHECK(cache.of(weight).storage() == first.storage());  // reused, not rounded again
    const Tensor view = weight;                            // another handle on the same bytes
    CHECK(cache.of(view).storage() == first.storage());

    const Tensor changed = random_tensor({6, 5}, 2, -1, 1, DType::f32);
    overwrite(weight, changed);
    const Tensor second = cache.of(weight);
    CHECK(second.storage() != first.storage());
    CHECK(second.to(DType::f32).to_vector<float>() == rounded(changed));

    const Tensor other = random_tensor({6, 5}, 3, -1, 1, DType::f32).to(device);
    CHECK(cache.of(other).to(DType::f32).to_vector<float>() == rounded(other));
    // A row of the same storage is another source too.
    const Tensor row = view_of(other, {5}, 5);
    CHECK(cache.of(row).to(DType::f32).to_vector<float>() == rounded(row));

    const Tensor already = other.to(DType::bf16);
    CHECK(cache.of(already).storage() == already.storage());
  }
}

TEST_CASE("bf16 copy: a frozen Linear's bf16 forward, with or without a gain, follows its weights through writes") {
  if (!testing::cpu_runs_bf16_products()) return;
  for (const Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device);
    Linear layer(5, 4, true, ParamInit::constant(0.25));
    layer.initialize(7);
    layer.to(device);
    layer.set_requires_grad(false);
    const Tensor x = random_tensor({3, 5}, 4, -1, 1, DType::f32).to(device).to(DType::bf16);
    auto fresh = [&] { return bf16_linear(x, layer.weight, layer.bias).to(DType::f32).to_vector<float>(); };
    auto cached = [&] { return layer.forward_bf16(x).to(DType::f32).to_vector<float>(); };
    CHECK(cached() == fresh());
    // With a gain (LayerScale): the product with gain·W and gain·b, plus the residual.
    Tensor gain = random_tensor({4}, 30, -0.5, 0.5, DType::f32).to(device);
    const Tensor residual = random_tensor({3, 4}, 32, -1, 1, DType::f32).to(device).to(DType::bf16);
    auto fresh_scaled = [&] {
      const Tensor w = (layer.weight * reshape(gain, {4, 1})).to(DType::bf16), b = (layer.bias * gain).to(DType::bf16);
      return bf16_linear(x, w, b, residual).to(DType::f32).to_vector<float>();
    };
    auto cached_scaled = [&] { return layer.forward_bf16(x, residual, gain).to(DType::f32).to_vector<float>(); };
    CHECK(cached_scaled() == fresh_scaled());
    overwrite(gain, random_tensor({4}, 33, -0.5, 0.5, DType::f32));  // a gain loaded in place
    CHECK(cached_scaled() == fresh_scaled());
    CHECK(cached() == fresh());

    overwrite(layer.weight, random_tensor({4, 5}, 5, -1, 1, DType::f32));  // in place
    overwrite(layer.bias, random_tensor({4}, 6, -1, 1, DType::f32));
    CHECK(cached() == fresh());
    CHECK(cached_scaled() == fresh_scaled());

    layer.load_parameters({{"weight", random_tensor({4, 5}, 8, -1, 1, DType::f32)},
                           {"bias", random_tensor({4}, 9, -1, 1, DType::f32)}});  // replaced
    CHECK(cached() == fresh());

    layer.initialize(11);  // drawn in place
    layer.set_requires_grad(false);
    CHECK(cached() == fresh());
  }
}

TEST_CASE("bf16 copy: a ViT's frozen blocks round their weights on the first bf16 forward only") {
  SimGCDModel model(small_simgcd_config());
  model.initialize(7);
  model.set_grad_from_block(2);  // blocks 0 and 1 frozen: 4 products each, each with a bias
  model.to(Device::cuda());
  const Tensor images = random_tensor({2, 3, 32, 32}, 40, -2, 2, DType::f32).to(Device::cuda());
  const ScopedEngineSettings bf16(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
  auto conversions_in_forward = [&] {
    const emu::RangeRecording recording;
    const Tensor features = model.backbone.forward(images);
    const Names names = recording.names();
    return std::count(names.begin(), names.end(), std::string("convert"));
  };
  const auto first = conversions_in_forward();
  const auto second = conversions_in_forward();
  CHECK(first - second == 2 * 4 * 2);  // weight and bias of the 8 frozen products
}

TEST_CASE("bf16 copy: a scaled copy is gain·source rounded once, kept until the source or the gain changes") {
  for (const Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device);
    Tensor weight = random_tensor({6, 5}, 21, -1, 1, DType::f32).to(device);
    Tensor gain = random_tensor({6}, 22, -0.5, 0.5, DType::f32).to(device);
    // Each row (or, for a vector, each element) times its gain in f32, rounded to bf16 once.
    auto expected = [](const Tensor& source, const Tensor& g) {
      const std::vector<float> s = source.to(Device::cpu()).to_vector<float>();
      const std::vector<float> gv = g.to(Device::cpu()).to_vector<float>();
      const size_t per_row = s.size() / gv.size();
      std::vector<float> out;
      for (size_t i = 0; i < s.size(); ++i) out.push_back(static_cast<float>(bf16(s[i] * gv[i / per_row])));
      return out;
    };
    auto values = [](const Tensor& t) {
      CHECK(t.dtype() == DType::bf16);
      return t.to(DType::f32).to_vector<float>();
    };
    Bf16Copy cache;
    const Tensor first = cache.of(weight, gain);
    CHECK(values(first) == expected(weight, gain));
    CHECK(cache.of(weight, gain).storage() == first.storage());  // kept

    overwrite(gain, random_tensor({6}, 23, -0.5, 0.5, DType::f32));
    CHECK(values(cache.of(weight, gain)) == expected(weight, gain));
    overwrite(weight, random_tensor({6, 5}, 24, -1, 1, DType::f32));
    CHECK(values(cache.of(weight, gain)) == expected(weight, gain));
    // The plain copy and the scaled one of one source are not taken for each other.
    CHECK(values(cache.of(weight)) == rounded(weight));
    CHECK(values(cache.of(weight, gain)) == expected(weight, gain));
    const Tensor other_gain = random_tensor({6}, 25, -0.5, 0.5, DType::f32).to(device);
    CHECK(values(cache.of(weight, other_gain)) == expected(weight, other_gain));

    const Tensor bias = random_tensor({6}, 26, -1, 1, DType::f32).to(device);
    CHECK(values(Bf16Copy().of(bias, gain)) == expected(bias, gain));
    CHECK_THROWS_WITH(cache.of(weight, random_tensor({5}, 27, -1, 1, DType::f32).to(device)),
                      doctest::Contains("does not scale the rows of"));
  }
}
