// The training views built on the device (data/device_augment.h) are the CPU loader's bit for
// bit: crop + flip, every RandAugment op at both signs and several magnitudes (and the special
// paths: quarter-turn rotations, Pillow's float affine path, blend factors 0 and above 1, flat
// and low-contrast images), then ToTensor + Normalize. uint8 views compare with ==, the
// normalised floats by their bits. Device runs: 3 emulator thread orders x 2 block sizes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "data/device_augment.h"
#include "data/loader.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

enum class Texture { noise, low_contrast, flat, gradient };

// An h × w image: full-range noise, values in [100, 140), one value, or a noisy ramp.
Image test_image(int64_t h, int64_t w, int64_t c, Texture texture, uint64_t seed) {
  RandomStream stream(seed, stream_id("augment parity image"));
  Image im(h, w, c);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) {
        int64_t v = 0;
        switch (texture) {
          case Texture::noise: v = stream.randint(0, 256); break;
          case Texture::low_contrast: v = stream.randint(100, 140); break;
          case Texture::flat: v = 77; break;
          case Texture::gradient:
            v = std::min<int64_t>(255, (x * 7 + y * 3 + k * 40) % 256 + stream.randint(0, 6));
            break;
        }
        im.at(y, x, k) = static_cast<uint8_t>(v);
      }
  return im;
}

// Every op at bins 0, 9 and 30 of 31, both signs where RandAugment draws one, plus the special
// cases of the ops' host-side decisions.
std::vector<AugmentStep> all_steps(int64_t size) {
  std::vector<AugmentStep> steps;
  for (int k = 0; k < num_augment_ops; ++k) {
    const auto op = static_cast<AugmentOp>(k);
    for (int bin : {0, 9, 30}) {
      const double m = augment_magnitude(op, bin, 31, size, size);
      steps.push_back({op, m});
      if (augment_op_signed(op)) steps.push_back({op, -m});
      if (!augment_op_signed(op) && m == 0) break;  // Identity, AutoContrast, Equalize: once
    }
  }
  const std::vector<AugmentStep> special = {
      {AugmentOp::rotate, 90},         {AugmentOp::rotate, -90},       {AugmentOp::rotate, 180},
      {AugmentOp::rotate, 270},        {AugmentOp::rotate, 360},       {AugmentOp::rotate, 45},
      {AugmentOp::shear_x, 2000},      {AugmentOp::shear_y, -2000},    // Pillow's float affine path
      {AugmentOp::translate_x, 1e5},   {AugmentOp::translate_y, -7.9}, // outside; truncation
      {AugmentOp::posterize, 0},       {AugmentOp::posterize, 8},      {AugmentOp::solarize, 0},
      {AugmentOp::solarize, 256},      {AugmentOp::brightness, -1},    {AugmentOp::brightness, 1.5},
      {AugmentOp::contrast, -1},       {AugmentOp::color, 2.0},        {AugmentOp::sharpness, 1.5},
  };
  steps.insert(steps.end(), special.begin(), special.end());
  return steps;
}

std::string describe(const ViewParams& v) {
  std::ostringstream out;
  out << "crop (" << v.crop_flip.top << ", " << v.crop_flip.left << ")" << (v.crop_flip.flip ? " flipped" : "");
  for (const AugmentStep& s : v.steps) out << ", " << augment_op_name(s.op) << " " << s.magnitude;
  return out.str();
}

struct Batch {
  std::vector<Image> images;
  std::vector<ViewParams> views;
  int64_t size = 0;
};

// Views of two steps each, on resized images of varied sizes and textures: every step comes once
// first (on a fresh crop) and once second (after another op); one view has no step, one three,
// and two crops reach outside their image.
Batch step_batch(int64_t size, int64_t channels, uint64_t seed) {
  Batch batch;
  batch.size = size;
  RandomStream stream(seed, stream_id("augment parity views"));
  const std::vector<AugmentStep> steps = all_steps(size);
  std::vector<std::vector<AugmentStep>> view_steps = {{}, {steps[3], steps[20], steps[40]}};
  for (size_t i = 0; i < steps.size(); ++i) view_steps.push_back({steps[i], steps[(i * 5 + 11) % steps.size()]});
  for (size_t i = 0; i < view_steps.size(); ++i) {
    const int64_t h = size + stream.randint(0, 8), w = size + stream.randint(0, 8);
    const auto texture = static_cast<Texture>(i % 4);
    batch.images.push_back(test_image(h, w, channels, texture, seed * 1000 + i));
    ViewParams v;
    v.crop_flip = draw_random_crop_flip(stream, h, w, size);
    v.steps = view_steps[i];
    batch.views.push_back(v);
  }
  batch.views[4].crop_flip = {-3, batch.images[4].width - size + 4, true};
  batch.views[5].crop_flip = {batch.images[5].height - size + 3, -2, false};
  return batch;
}

// Device views (uint8, then normalised) against the CPU's, under every thread order and block size.
void check_batch_parity(const std::string& name, const Batch& batch) {
  const Normalization norm = Normalization::for_channels(batch.images.front().channels);
  const int64_t view_bytes = batch.size * batch.size * batch.images.front().channels;
  const std::vector<uint8_t> expected =
      augment_images(batch.images, batch.views, batch.size, Device::cpu()).to_vector<uint8_t>();
  const std::vector<float> expected_f32 =
      augment_batch(batch.images, batch.views, batch.size, norm, Device::cpu()).to_vector<float>();
  for (unsigned block : {0u, 64u}) emu::for_each_thread_order([&](emu::ThreadOrder order) {
    const std::string label = name + " (" + emu::to_string(order) + " thread order, block size " +
                              (block ? std::to_string(block) : std::string("default")) + ")";
    Tensor views, normalised;
    {
      const ScopedEngineSettings settings(device_run_settings(block));
      views = augment_images(batch.images, batch.views, batch.size, Device::cuda());
      normalised = augment_batch(batch.images, batch.views, batch.size, norm, Device::cuda());
    }
    REQUIRE_MESSAGE(views.device().is_cuda(), label);
    REQUIRE_MESSAGE(normalised.device().is_cuda(), label);
    CHECK(views.shape() == Shape{static_cast<int64_t>(batch.views.size()), batch.size, batch.size,
                                 batch.images.front().channels});
    const std::vector<uint8_t> got = views.to_vector<uint8_t>();
    REQUIRE(got.size() == expected.size());
    for (size_t b = 0; b < batch.views.size(); ++b) {
      int64_t differing = 0;
      for (int64_t i = 0; i < view_bytes; ++i) differing += got[b * view_bytes + i] != expected[b * view_bytes + i];
      CHECK_MESSAGE(differing == 0, label << ": view " << b << " (" << describe(batch.views[b]) << "): " << differing
                                          << " bytes differ");
    }
    const std::vector<float> got_f32 = normalised.to_vector<float>();
    REQUIRE(got_f32.size() == expected_f32.size());
    CHECK_MESSAGE(std::memcmp(got_f32.data(), expected_f32.data(), got_f32.size() * sizeof(float)) == 0,
                  label << ": the normalised views differ");
  });
}

}  // namespace

TEST_CASE("device augment: every RandAugment op, both signs, bit for bit the CPU's (RGB)") {
  check_batch_parity("RGB 27x27", step_batch(27, 3, 1));
  check_batch_parity("RGB 40x40", step_batch(40, 3, 3));
}

TEST_CASE("device augment: every RandAugment op, both signs, bit for bit the CPU's (grayscale)") {
  check_batch_parity("L 20x20", step_batch(20, 1, 2));
  check_batch_parity("L 33x33", step_batch(33, 1, 4));
}

TEST_CASE("device augment: drawn train and strong views match make_view") {
  // The loader's setting: resized to int(S / 0.875), views drawn in make_view's stream order.
  const int64_t size = 24, resized = TransformSizes{size}.resize_size();
  for (int64_t channels : {3, 1}) {
    Batch batch;
    batch.size = size;
    const Normalization norm = Normalization::for_channels(channels);
    std::vector<float> reference(static_cast<size_t>(12 * channels * size * size));
    for (int64_t i = 0; i < 12; ++i) {
      const bool strong = i % 3 != 0;
      batch.images.push_back(test_image(resized, resized + i % 2, channels, static_cast<Texture>(i % 4), 50 + i));
      const uint64_t id = stream_id("augment parity draw", {channels, i});
      RandomStream stream(3, id), loader_stream(3, id);
      const Image& image = batch.images.back();
      batch.views.push_back(draw_view_params(stream, image.height, image.width, size, strong));
      const Image view = make_view(image, strong ? ViewKind::strong : ViewKind::train, size, loader_stream);
      CHECK(stream.counter() == loader_stream.counter());
      to_tensor_normalize(view, norm, reference.data() + i * channels * size * size);
    }
    const std::vector<float> cpu =
        augment_batch(batch.images, batch.views, size, norm, Device::cpu()).to_vector<float>();
    CHECK(std::memcmp(cpu.data(), reference.data(), cpu.size() * sizeof(float)) == 0);
    check_batch_parity(channels == 3 ? "drawn RGB views" : "drawn L views", batch);
  }
}

TEST_CASE("device augment: a batch's views made together equal each made alone") {
  const Batch batch = step_batch(27, 3, 1);
  std::vector<ViewParams> other(batch.views.rbegin(), batch.views.rend());  // another view of each image
  for (size_t b = 0; b < other.size(); ++b) other[b].crop_flip = batch.views[b].crop_flip;
  const Normalization norm = Normalization::for_channels(3);
  const std::vector<Tensor> together =
      augment_batch_views(batch.images, {batch.views, other}, batch.size, norm, Device::cuda());
  REQUIRE(together.size() == 2);
  CHECK(together[0].to_vector<float>() ==
        augment_batch(batch.images, batch.views, batch.size, norm, Device::cpu()).to_vector<float>());
  CHECK(together[1].to_vector<float>() ==
        augment_batch(batch.images, other, batch.size, norm, Device::cpu()).to_vector<float>());
  CHECK_THROWS_WITH(augment_batch_views(batch.images, {}, batch.size, norm, Device::cuda()),
                    doctest::Contains("augment_batch: no views asked for"));
}

TEST_CASE("device augment: errors name the function and the mismatch") {
  const Image rgb = test_image(30, 30, 3, Texture::noise, 9), grey = test_image(30, 30, 1, Texture::noise, 9);
  const ViewParams plain;
  for (Device device : {Device::cpu(), Device::cuda()}) {
    CHECK_THROWS_WITH(augment_images({rgb, rgb}, {plain}, 24, device),
                      doctest::Contains("augment_images: 2 images but 1 view parameters"));
    CHECK_THROWS_WITH(augment_images({rgb, grey}, {plain, plain}, 24, device),
                      doctest::Contains("augment_images: images with 3 and 1 channels in one batch"));
    CHECK_THROWS_WITH(augment_images({}, {}, 24, device), doctest::Contains("augment_images: empty batch"));
    CHECK_THROWS_WITH(augment_batch({rgb}, {plain}, 24, Normalization::grayscale(), device),
                      doctest::Contains("augment_batch: 3-channel images but 1 means and 1 stds"));
    CHECK_THROWS_WITH(augment_images({rgb}, {ViewParams{{}, {{AugmentOp::posterize, 9}}}}, 24, device),
                      doctest::Contains("Posterize: bits must be in [0, 8]"));
  }
}
