#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <stb/stb_image_write.h>

#include "data/resize.h"
#include "data/transforms.h"
#include "tests/data/augment_fixtures.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

Image ramp(int64_t h, int64_t w, int64_t c) {
  Image im(h, w, c);
  for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return im;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("mcdl_test_transforms_" + name)).string();
}

}  // namespace

TEST_CASE("decode_image: PNG round trip, grey replicated to RGB, RGB to L with PIL's weights") {
  const Image rgb = ramp(5, 7, 3), grey = ramp(4, 3, 1);
  const std::string rgb_path = temp_path("rgb.png"), grey_path = temp_path("grey.png");
  write_png(rgb_path, rgb);
  write_png(grey_path, grey);
  CHECK(decode_image(rgb_path, 3) == rgb);
  CHECK(decode_image(grey_path, 1) == grey);
  const Image grey_as_rgb = decode_image(grey_path, 3);
  REQUIRE(grey_as_rgb.channels == 3);
  for (int64_t i = 0; i < 12; ++i)
    for (int c = 0; c < 3; ++c) CHECK(grey_as_rgb.pixels[static_cast<size_t>(3 * i + c)] == grey.pixels[static_cast<size_t>(i)]);
  // convert('L'): (R*19595 + G*38470 + B*7471 + 0x8000) >> 16.
  const Image l = decode_image(rgb_path, 1);
  const uint8_t* p = &rgb.pixels[3 * 6];
  CHECK(l.pixels[6] == ((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16));
  std::remove(rgb_path.c_str());
  std::remove(grey_path.c_str());
}

TEST_CASE("decode_image: alpha dropped from RGBA and grey + alpha PNGs, to RGB and to L") {
  const Image rgba = ramp(6, 5, 4), grey_alpha = ramp(3, 7, 2);
  const std::string rgba_path = temp_path("rgba.png"), grey_alpha_path = temp_path("grey_alpha.png");
  REQUIRE(stbi_write_png(rgba_path.c_str(), 5, 6, 4, rgba.pixels.data(), 5 * 4));
  REQUIRE(stbi_write_png(grey_alpha_path.c_str(), 7, 3, 2, grey_alpha.pixels.data(), 7 * 2));
  const Image rgb = decode_image(rgba_path, 3), l = decode_image(rgba_path, 1);
  const Image grey_rgb = decode_image(grey_alpha_path, 3), grey = decode_image(grey_alpha_path, 1);
  REQUIRE(rgb.pixels.size() == 30 * 3);
  REQUIRE(l.pixels.size() == 30);
  for (size_t i = 0; i < 30; ++i) {
    const uint8_t* p = &rgba.pixels[4 * i];
    CHECK(rgb.pixels[3 * i] == p[0]);
    CHECK(rgb.pixels[3 * i + 1] == p[1]);
    CHECK(rgb.pixels[3 * i + 2] == p[2]);
    CHECK(l.pixels[i] == ((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16));
  }
  REQUIRE(grey_rgb.pixels.size() == 21 * 3);
  REQUIRE(grey.pixels.size() == 21);
  for (size_t i = 0; i < 21; ++i) {
    CHECK(grey.pixels[i] == grey_alpha.pixels[2 * i]);
    for (size_t c = 0; c < 3; ++c) CHECK(grey_rgb.pixels[3 * i + c] == grey_alpha.pixels[2 * i]);
  }
  std::remove(rgba_path.c_str());
  std::remove(grey_alpha_path.c_str());
}

TEST_CASE("decode_image: missing and corrupt files throw naming the path") {
  CHECK_THROWS_WITH(decode_image("/nonexistent/dir/bird.jpg"),
                    doctest::Contains("decode_image: cannot open '/nonexistent/dir/bird.jpg': No such file"));
  const std::string path = temp_path("corrupt.jpg");
  {
    std::ofstream out(path, std::ios::binary);
    const unsigned char bytes[] = {0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x05, 0x13, 0x37, 0x42, 0xFF, 0xC0, 0x00, 0x02, 0x99};
    out.write(reinterpret_cast<const char*>(bytes), sizeof bytes);
  }
  CHECK_THROWS_WITH(decode_image(path), doctest::Contains(("decode_image: cannot decode '" + path + "': ").c_str()));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(decode_image(path, 2), doctest::Contains("channels must be 3 or 1, got 2"));
  CHECK_THROWS_WITH(write_png("/nonexistent/dir/out.png", ramp(2, 2, 3)),
                    doctest::Contains("write_png: cannot write '/nonexistent/dir/out.png'"));
}

TEST_CASE("center_crop: torchvision offsets (round half to even) and zero padding") {
  const auto cases = augment_cases("center");
  REQUIRE(cases.size() >= 5);
  for (const auto& c : cases) {
    const int64_t channels = std::stoll(c[2]);
    INFO(c[1], " ", c[3], "x", c[4]);
    CHECK(differing_bytes(center_crop(fixture_image(c[1], channels), std::stoll(c[3]), std::stoll(c[4])),
                          fixture_image(c[5], channels)) == 0);
  }
  // (23 − 20)/2 = 1.5 → 2; (37 − 20)/2 = 8.5 → 8.
  const Image im = ramp(23, 37, 1);
  CHECK(center_crop(im, 20, 20) == crop(im, 2, 8, 20, 20));
}

TEST_CASE("test pipeline: Resize(int(S/0.875)) + CenterCrop(S) matches torchvision") {
  for (const auto& c : augment_cases("test")) {
    const int64_t channels = std::stoll(c[2]), s = std::stoll(c[3]);
    const TransformSizes sizes{s};
    const Image out = center_crop(resize_shorter_side(fixture_image(c[1], channels), sizes.resize_size()), s, s);
    INFO(c[1], " S=", s);
    CHECK(differing_bytes(out, fixture_image(c[4], channels)) == 0);
  }
  CHECK(TransformSizes{224}.resize_size() == 256);
  CHECK(TransformSizes{28}.resize_size() == 32);
}

TEST_CASE("crop and hflip: PIL semantics") {
  const Image im = ramp(4, 5, 3);
  const Image c = crop(im, 1, 2, 2, 3);
  CHECK(c.at(0, 0, 1) == im.at(1, 2, 1));
  CHECK(c.at(1, 2, 2) == im.at(2, 4, 2));
  const Image outside = crop(im, -1, 3, 3, 4);  // PIL fills outside the image with 0
  CHECK(outside.at(0, 0, 0) == 0);
  CHECK(outside.at(1, 0, 0) == im.at(0, 3, 0));
  CHECK(outside.at(1, 1, 2) == im.at(0, 4, 2));
  CHECK(outside.at(1, 2, 0) == 0);
  const Image f = hflip(im);
  CHECK(f.at(3, 0, 2) == im.at(3, 4, 2));
  CHECK(hflip(f) == im);
  CHECK_THROWS_WITH(crop(im, 0, 0, 0, 3), doctest::Contains("crop: size must be positive"));
}

TEST_CASE("to_tensor_normalize: bit-identical to torchvision ToTensor + Normalize") {
  for (const auto& c : augment_cases("normalize")) {
    const int64_t channels = std::stoll(c[2]);
    const Image im = fixture_image(c[1], channels);
    const size_t n = im.pixels.size();
    std::vector<float> expected(n), out(n, -1e30f);
    std::ifstream in(augment_fixture(c[3]), std::ios::binary);
    in.read(reinterpret_cast<char*>(expected.data()), static_cast<std::streamsize>(n * sizeof(float)));
    REQUIRE(in.gcount() == static_cast<std::streamsize>(n * sizeof(float)));
    to_tensor_normalize(im, Normalization::for_channels(channels), out.data());
    INFO(c[1]);
    CHECK(std::memcmp(out.data(), expected.data(), n * sizeof(float)) == 0);
  }
  // (255/255 − 0.485)/0.229 and (0 − 0.406)/0.225, in float32.
  Image im(1, 2, 3);
  im.pixels = {255, 0, 0, 0, 0, 0};
  float out[6];
  to_tensor_normalize(im, Normalization::imagenet(), out);
  CHECK(out[0] == doctest::Approx(2.2489083).epsilon(1e-6));
  CHECK(out[5] == doctest::Approx(-1.8044444).epsilon(1e-6));
  CHECK_THROWS_WITH(to_tensor_normalize(im, Normalization::grayscale(), out),
                    doctest::Contains("to_tensor_normalize: 3-channel image but 1 means"));
}

TEST_CASE("draw_random_crop_flip: uniform offsets over the valid range, fair flips") {
  RandomStream stream(7, stream_id("test_crop_flip"));
  std::vector<int64_t> tops(33, 0), lefts(118, 0);
  int flips = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const CropFlip p = draw_random_crop_flip(stream, 256, 341, 224);
    REQUIRE(p.top >= 0);
    REQUIRE(p.top <= 32);
    REQUIRE(p.left >= 0);
    REQUIRE(p.left <= 117);
    ++tops[static_cast<size_t>(p.top)];
    ++lefts[static_cast<size_t>(p.left)];
    flips += p.flip;
  }
  CHECK(tops.front() > 0);
  CHECK(tops.back() > 0);
  CHECK(lefts.back() > 0);
  CHECK(std::abs(flips - n / 2) < 4 * std::sqrt(n / 4.0));
  for (int64_t t : tops) CHECK(std::abs(static_cast<double>(t) - n / 33.0) < 6 * std::sqrt(n / 33.0));
  // An image of exactly the crop size: offsets 0 and no draw for them (one word for the flip).
  RandomStream exact(1, 2);
  const CropFlip p = draw_random_crop_flip(exact, 224, 224, 224);
  CHECK(p.top == 0);
  CHECK(p.left == 0);
  CHECK(exact.counter() == 1);
  CHECK_THROWS_WITH(draw_random_crop_flip(exact, 200, 300, 224),
                    doctest::Contains("random crop: crop size 224 is larger than the 200x300 image"));
  const Image im = ramp(6, 8, 3);
  CHECK(apply_crop_flip(im, {1, 2, true}, 4) == hflip(crop(im, 1, 2, 4, 4)));
}

TEST_CASE("draw_random_resized_crop: crops inside the image with the scale and ratio ranges") {
  RandomStream stream(3, stream_id("test_rrc"));
  double mean_fraction = 0.0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const ResizedCrop c = draw_random_resized_crop(stream, 256, 341);
    REQUIRE(c.height > 0);
    REQUIRE(c.width > 0);
    REQUIRE(c.top + c.height <= 256);
    REQUIRE(c.left + c.width <= 341);
    const double ratio = static_cast<double>(c.width) / static_cast<double>(c.height);
    CHECK(ratio > 0.70);
    CHECK(ratio < 1.40);
    mean_fraction += static_cast<double>(c.height * c.width) / (256.0 * 341) / n;
  }
  // E[U(0.08, 1)] = 0.54, less the rejected large crops.
  CHECK(mean_fraction > 0.40);
  CHECK(mean_fraction < 0.56);
  // A 1×1000 strip never fits a ratio in [3/4, 4/3] at 8% area: the centred fallback,
  // w = round(1 · 4/3) = 1.
  const ResizedCrop strip = draw_random_resized_crop(stream, 1, 1000);
  CHECK(strip.height == 1);
  CHECK(strip.width == 1);
  CHECK(strip.left == 499);
  const Image im = ramp(40, 50, 3);
  const Image out = apply_resized_crop(im, {3, 4, 20, 30}, 16);
  CHECK(out == resize_bicubic(crop(im, 3, 4, 20, 30), 16, 16));
}
