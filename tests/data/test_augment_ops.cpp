// The CPU loops of data/augment_ops.cpp against kernels/augment_math.h's per-pixel formulas
// applied one pixel at a time: the loops reorganise the work (edge lines shared between rows,
// sixteen lanes where the processor has AVX-512, channel counts known to the compiler), and
// must still give every byte the formula gives. The Pillow fixtures (test_randaugment.cpp) check
// the formulas themselves on small images; these check the loops on many sizes.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "data/augment_ops.h"
#include "engine/random.h"
#include "kernels/augment_math.h"
#include "kernels/cpu/cpu_features.h"

using namespace mcdl;

namespace {

struct Pixels {
  int64_t height, width, channels;
  std::vector<uint8_t> bytes;
  int64_t size() const { return height * width * channels; }
};

// Noise, a narrow band (blends that truncate near one value) or black and white (clipping).
Pixels random_pixels(RandomStream& stream, int64_t height, int64_t width, int64_t channels) {
  Pixels p{height, width, channels, std::vector<uint8_t>(static_cast<size_t>(height * width * channels))};
  const int64_t kind = stream.randint(0, 3);
  for (uint8_t& v : p.bytes)
    v = static_cast<uint8_t>(kind == 0 ? stream.randint(0, 256)
                             : kind == 1 ? 100 + stream.randint(0, 20)
                                         : 255 * stream.randint(0, 2));
  return p;
}

// Sizes from 1×1 to 80×80 (odd widths leave a remainder after every vector width), and 224².
std::vector<Pixels> test_images() {
  RandomStream stream(3, stream_id("test_augment_ops"));
  std::vector<Pixels> images;
  for (int i = 0; i < 120; ++i)
    images.push_back(random_pixels(stream, 1 + stream.randint(0, 80), 1 + stream.randint(0, 80), i % 2 ? 3 : 1));
  images.push_back(random_pixels(stream, 224, 224, 3));
  return images;
}

}  // namespace

TEST_CASE("smooth: every byte smooth_value's, the border and small images copied") {
  for (const Pixels& p : test_images()) {
    CAPTURE(p.height);
    CAPTURE(p.width);
    CAPTURE(p.channels);
    std::vector<uint8_t> got(p.bytes.size());
    pixel_ops::smooth(p.bytes.data(), got.data(), p.height, p.width, p.channels);
    const int64_t row = p.width * p.channels;
    int64_t differing = 0;
    for (int64_t y = 0; y < p.height; ++y)
      for (int64_t x = 0; x < p.width; ++x)
        for (int64_t c = 0; c < p.channels; ++c) {
          const int64_t at = y * row + x * p.channels + c;
          const uint8_t expected = pixel_math::smooth_copies(x, y, p.height, p.width)
                                       ? p.bytes[static_cast<size_t>(at)]
                                       : pixel_math::smooth_value(p.bytes.data() + at, row, p.channels);
          differing += got[static_cast<size_t>(at)] != expected;
        }
    CHECK(differing == 0);
  }
  if (!cpu::has_avx512bw()) MESSAGE("no AVX-512BW here: only the baseline loops ran");
}

TEST_CASE("blend: every byte blend_value's, for factors inside, at and beyond [0, 1]") {
  const std::vector<Pixels> images = test_images();
  for (size_t i = 0; i + 1 < images.size(); i += 2) {
    const Pixels& degenerate = images[i];
    Pixels image = images[i + 1];
    image.bytes.resize(degenerate.bytes.size(), 77);  // the same length as the degenerate
    for (float alpha : {-1.0f, -0.1f, 0.0f, 0.1f, 0.5f, 0.9f, 1.0f, 1.1f, 1.9f, 2.0f}) {
      CAPTURE(alpha);
      std::vector<uint8_t> got(degenerate.bytes.size());
      pixel_ops::blend(degenerate.bytes.data(), image.bytes.data(), got.data(), degenerate.size(), alpha);
      int64_t differing = 0;
      for (size_t k = 0; k < got.size(); ++k)
        differing += got[k] != pixel_math::blend_value(degenerate.bytes[k], image.bytes[k], alpha);
      CHECK(differing == 0);
    }
  }
}

TEST_CASE("histogram and apply_luts: per channel, for 1 and 3 channels") {
  RandomStream stream(4, stream_id("test_augment_ops_luts"));
  for (const Pixels& p : test_images()) {
    const int64_t pixels = p.height * p.width;
    std::vector<int64_t> hist(static_cast<size_t>(256 * p.channels), -1), expected(hist.size(), 0);
    pixel_ops::histogram(p.bytes.data(), pixels, p.channels, hist.data());
    const auto table_index = [&](int64_t k) {  // the histogram bin or table entry of byte k
      return static_cast<size_t>(k % p.channels * 256 + p.bytes[static_cast<size_t>(k)]);
    };
    for (int64_t k = 0; k < p.size(); ++k) ++expected[table_index(k)];
    CHECK(hist == expected);

    std::vector<uint8_t> luts(static_cast<size_t>(256 * p.channels)), got(p.bytes.size());
    for (uint8_t& v : luts) v = static_cast<uint8_t>(stream.randint(0, 256));
    pixel_ops::apply_luts(p.bytes.data(), got.data(), pixels, p.channels, luts.data());
    int64_t differing = 0;
    for (int64_t k = 0; k < p.size(); ++k)
      differing += got[static_cast<size_t>(k)] != luts[table_index(k)];
    CHECK(differing == 0);
  }
}

TEST_CASE("affine_nearest: every pixel where its path's formulas put it (scale, fixed and float paths)") {
  RandomStream stream(5, stream_id("test_augment_ops_affine"));
  for (const Pixels& p : test_images()) {
    for (int trial = 0; trial < 3; ++trial) {
      // trial 0: no shear (the scale path); 1: a shear (fixed point); 2: a huge shear (float path).
      const double w = static_cast<double>(p.width), h = static_cast<double>(p.height);
      double m[6] = {stream.uniform(0.7, 1.3), trial == 0 ? 0.0 : stream.uniform(-0.5, 0.5), stream.uniform(-w, w),
                     trial == 0 ? 0.0 : stream.uniform(-0.5, 0.5), stream.uniform(0.7, 1.3), stream.uniform(-h, h)};
      if (trial == 2) m[1] = (stream.randint(0, 2) ? 1 : -1) * stream.uniform(1e5, 2e5);
      const pixel_math::AffinePlan plan = pixel_math::plan_affine(m, p.height, p.width);
      CHECK(plan.path == (trial == 0 ? pixel_math::affine_scale : trial == 1 ? pixel_math::affine_fixed
                                                                             : pixel_math::affine_float));
      std::vector<uint8_t> got(p.bytes.size()), expected(p.bytes.size(), 0);
      pixel_ops::affine_nearest(p.bytes.data(), got.data(), p.height, p.width, p.channels, m);
      std::vector<int64_t> source_x(static_cast<size_t>(p.width)), source_y(static_cast<size_t>(p.height));
      pixel_math::scale_sources(plan.x0, plan.m0, p.width, source_x.data());
      pixel_math::scale_sources(plan.y0, plan.m4, p.height, source_y.data());
      for (int64_t y = 0; y < p.height; ++y) {
        uint8_t* row = expected.data() + y * p.width * p.channels;
        if (plan.path == pixel_math::affine_float) {
          double xx, yy;
          pixel_math::float_row_start(plan, y, xx, yy);
          pixel_math::float_affine_row(p.bytes.data(), row, p.height, p.width, p.channels, plan, xx, yy);
          continue;
        }
        for (int64_t x = 0; x < p.width; ++x) {
          int64_t sx = source_x[static_cast<size_t>(x)], sy = source_y[static_cast<size_t>(y)];
          const bool inside = plan.path == pixel_math::affine_scale
                                  ? sx >= 0 && sy >= 0
                                  : pixel_math::fixed_source(plan, x, y, p.height, p.width, sx, sy);
          if (inside)
            pixel_math::copy_pixel(p.bytes.data() + (sy * p.width + sx) * p.channels, row + x * p.channels, p.channels);
        }
      }
      CHECK(got == expected);
    }
  }
}

TEST_CASE("grey_rgb: every channel of a pixel its luma") {
  for (const Pixels& p : test_images()) {
    if (p.channels != 3) continue;
    std::vector<uint8_t> got(p.bytes.size());
    pixel_ops::grey_rgb(p.bytes.data(), got.data(), p.height * p.width);
    int64_t differing = 0;
    for (int64_t k = 0; k < p.size(); ++k) {
      const uint8_t* pixel = p.bytes.data() + k / 3 * 3;
      differing += got[static_cast<size_t>(k)] != pixel_math::luma(pixel[0], pixel[1], pixel[2]);
    }
    CHECK(differing == 0);
  }
}
