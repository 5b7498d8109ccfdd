#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <random>
#include <utility>
#include <vector>

#include "data/resize.h"
#include "tests/data/augment_fixtures.h"

using namespace mcdl;
using namespace mcdl::testing;

TEST_CASE("resize_bicubic: bit-identical to Pillow 9.4 Image.resize(BICUBIC)") {
  // Upsampling, 4x and non-integer downsampling, one dimension unchanged (a skipped pass), one
  // up and one down, 1x1, grayscale.
  const auto cases = augment_cases("resize");
  REQUIRE(cases.size() >= 10);
  for (const auto& c : cases) {
    const int64_t channels = std::stoll(c[2]);
    const Image in = fixture_image(c[1], channels);
    const Image expected = fixture_image(c[5], channels);
    const Image out = resize_bicubic(in, std::stoll(c[3]), std::stoll(c[4]));
    INFO(c[1], " -> ", c[3], "x", c[4]);
    CHECK(differing_bytes(out, expected) == 0);
  }
}

TEST_CASE("resize_shorter_side: torchvision Resize(int, BICUBIC)") {
  const auto cases = augment_cases("shorter");
  REQUIRE(cases.size() >= 5);
  for (const auto& c : cases) {
    const int64_t channels = std::stoll(c[2]);
    const Image in = fixture_image(c[1], channels);
    const Image expected = fixture_image(c[4], channels);
    INFO(c[1], " size ", c[3]);
    CHECK(differing_bytes(resize_shorter_side(in, std::stoll(c[3])), expected) == 0);
  }
}

TEST_CASE("shorter_side_output_size: int(size * long / short), truncated") {
  CHECK(shorter_side_output_size(427, 640, 256) == ImageSize{256, 383});  // 383.6 -> 383
  CHECK(shorter_side_output_size(640, 427, 256) == ImageSize{383, 256});
  CHECK(shorter_side_output_size(500, 500, 256) == ImageSize{256, 256});
  CHECK(shorter_side_output_size(28, 28, 32) == ImageSize{32, 32});
  CHECK(shorter_side_output_size(3, 1000, 224) == ImageSize{224, 74666});
  CHECK_THROWS_WITH(shorter_side_output_size(10, 10, 0), doctest::Contains("resize_shorter_side: size 0"));
}

TEST_CASE("resize_bicubic: unchanged size returns the image, bad sizes throw") {
  Image im(3, 4, 3);
  for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = static_cast<uint8_t>(i * 7);
  CHECK(resize_bicubic(im, 4, 3) == im);
  CHECK_THROWS_WITH(resize_bicubic(im, 0, 3), doctest::Contains("resize_bicubic: output size must be positive"));
  CHECK_THROWS_WITH(resize_bicubic(Image(), 2, 2), doctest::Contains("resize_bicubic: bad input image 0x0x0"));
}

TEST_CASE("resize_bicubic: a constant image stays constant, up and down") {
  Image im(37, 53, 3);
  std::fill(im.pixels.begin(), im.pixels.end(), uint8_t{200});
  for (auto [w, h] : {std::pair{7, 5}, std::pair{100, 80}, std::pair{53, 9}}) {
    const Image out = resize_bicubic(im, w, h);
    CHECK(std::all_of(out.pixels.begin(), out.pixels.end(), [](uint8_t v) { return v == 200; }));
  }
}

namespace {

Image random_image(std::mt19937& rng, int64_t height, int64_t width, int64_t channels) {
  Image im(height, width, channels);
  for (auto& v : im.pixels) v = static_cast<uint8_t>(rng() & 255);
  return im;
}

// out.at(x, y, c) = im.at(y, x, c), one pixel at a time.
Image transposed(const Image& im) {
  Image out(im.width, im.height, im.channels);
  for (int64_t y = 0; y < im.height; ++y)
    for (int64_t x = 0; x < im.width; ++x)
      for (int64_t c = 0; c < im.channels; ++c) out.at(x, y, c) = im.at(y, x, c);
  return out;
}

}  // namespace

TEST_CASE("resize_bicubic: along x it is the transposed image resized along y, at many sizes") {
  // The horizontal pass runs on transposed tiles (RGB as four-byte pixels), the vertical pass on
  // rows: they must agree for 1-pixel images, partial tiles and tile-aligned sizes alike.
  std::mt19937 rng(11);
  std::vector<std::pair<int64_t, int64_t>> sizes = {{1, 1}, {1, 17}, {16, 16}, {17, 33}, {32, 31}, {3, 200}};
  for (int i = 0; i < 40; ++i) sizes.emplace_back(static_cast<int64_t>(1 + rng() % 70), static_cast<int64_t>(1 + rng() % 300));
  int64_t cases = 0;
  for (const auto& [height, width] : sizes) {
    for (int64_t channels : {3, 1}) {
      const Image im = random_image(rng, height, width, channels);
      for (int64_t out_width : {int64_t{1}, width / 3 + 1, width + 5, 2 * width + 1, static_cast<int64_t>(1 + rng() % 400)}) {
        if (out_width == width) continue;
        INFO(height, "x", width, "x", channels, " to width ", out_width);
        const Image along_x = resize_bicubic(im, out_width, height);
        CHECK(differing_bytes(along_x, transposed(resize_bicubic(transposed(im), height, out_width))) == 0);
        ++cases;
      }
    }
  }
  CHECK(cases > 400);
}

TEST_CASE("resize_bicubic: both axes is x then y, whatever size the call before it had") {
  // The horizontal pass keeps per-thread buffers between calls, and with both passes it resamples
  // only the rows the vertical pass reads: neither may change a byte. Sizes grow and shrink from
  // call to call, across the limit past which the buffers are given back (4 MB).
  std::mt19937 rng(12);
  const std::vector<std::array<int64_t, 4>> cases = {
      {375, 500, 256, 341}, {20, 30, 7, 45}, {1200, 1300, 300, 200}, {64, 48, 100, 90}, {375, 500, 224, 298},
      {9, 700, 3, 70},      {33, 1, 5, 2},   {1, 40, 2, 13},          {2100, 700, 256, 85}};
  for (const auto& [height, width, out_height, out_width] : cases) {
    const Image im = random_image(rng, height, width, 3);
    INFO(height, "x", width, " to ", out_height, "x", out_width);
    const Image expected = resize_bicubic(resize_bicubic(im, out_width, height), out_width, out_height);
    CHECK(differing_bytes(resize_bicubic(im, out_width, out_height), expected) == 0);
  }
}
