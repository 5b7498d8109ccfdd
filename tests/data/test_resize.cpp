#include <doctest/doctest.h>

#include <algorithm>

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
