// The CPU loops of the RandAugment ops; the per-pixel formulas are kernels/augment_math.h's,
// which the CUDA kernels (kernels/cuda/augment.cu) share.
#include "data/augment_ops.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/augment_math.h"

namespace mcdl::pixel_ops {
namespace {

using namespace pixel_math;

// The valid x positions form one interval (the positions are monotone), so copying where both
// source indices are valid is ImagingScaleAffine's [xmin, xmax) loop.
void scale_affine(const uint8_t* src, uint8_t* dst, int64_t h, int64_t w, int64_t c, const AffinePlan& p) {
  std::vector<int64_t> source_x(static_cast<size_t>(w)), source_y(static_cast<size_t>(h));
  scale_sources(p.x0, p.m0, w, source_x.data());
  scale_sources(p.y0, p.m4, h, source_y.data());
  for (int64_t y = 0; y < h; ++y) {
    const int64_t yin = source_y[static_cast<size_t>(y)];
    if (yin < 0) continue;
    for (int64_t x = 0; x < w; ++x) {
      const int64_t xin = source_x[static_cast<size_t>(x)];
      if (xin >= 0) copy_pixel(src + (yin * w + xin) * c, dst + (y * w + x) * c, c);
    }
  }
}

void fixed_affine(const uint8_t* src, uint8_t* dst, int64_t h, int64_t w, int64_t c, const AffinePlan& p) {
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      int64_t xin, yin;
      if (fixed_source(p, x, y, h, w, xin, yin)) copy_pixel(src + (yin * w + xin) * c, dst + (y * w + x) * c, c);
    }
  }
}

void float_affine(const uint8_t* src, uint8_t* dst, int64_t h, int64_t w, int64_t c, const AffinePlan& p) {
  double xo = p.x0, yo = p.y0;
  for (int64_t y = 0; y < h; ++y) {
    float_affine_row(src, dst + y * w * c, h, w, c, p, xo, yo);
    xo = add_rn(xo, p.m1);
    yo = add_rn(yo, p.m4);
  }
}

}  // namespace

void affine_nearest(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width, int64_t channels,
                    const double m[6]) {
  std::memset(dst, 0, static_cast<size_t>(height * width * channels));
  const AffinePlan plan = plan_affine(m, height, width);
  switch (plan.path) {
    case affine_scale: return scale_affine(src, dst, height, width, channels, plan);
    case affine_fixed: return fixed_affine(src, dst, height, width, channels, plan);
    default: return float_affine(src, dst, height, width, channels, plan);
  }
}

void rotate_quarter_turns(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width, int64_t channels,
                          int quarter_turns) {
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      int64_t sx, sy;
      quarter_turn_source(x, y, height, width, quarter_turns, sx, sy);
      copy_pixel(src + (sy * width + sx) * channels, dst + (y * width + x) * channels, channels);
    }
  }
}

void blend(const uint8_t* degenerate, const uint8_t* image, uint8_t* dst, int64_t count, float alpha) {
  // blend_value's cases depend on alpha alone: choose once, so that each case is a branch-free
  // loop the compiler vectorises (the same float operations, the same bits).
  if (alpha == 0.0f || alpha == 1.0f) {
    std::memcpy(dst, alpha == 0.0f ? degenerate : image, static_cast<size_t>(count));
  } else if (alpha > 0.0f && alpha < 1.0f) {
#pragma omp simd
    for (int64_t i = 0; i < count; ++i)
      dst[i] = static_cast<uint8_t>(static_cast<int>(blend_float(degenerate[i], image[i], alpha)));
  } else {
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) dst[i] = clip8(blend_float(degenerate[i], image[i], alpha));
  }
}

void luma(const uint8_t* rgb, uint8_t* dst, int64_t pixels) {
  for (int64_t i = 0; i < pixels; ++i) dst[i] = static_cast<uint8_t>(luma_of(rgb + 3 * i, 3));
}

int contrast_grey_level(const uint8_t* src, int64_t pixels, int64_t channels) {
  int64_t sum = 0;  // Σ v·count(v): exact, as Python's float sum of integers below 2^53
  for (int64_t i = 0; i < pixels; ++i) sum += luma_of(src + channels * i, channels);
  return grey_level(sum, pixels);
}

void smooth(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width, int64_t channels) {
  const int64_t row = width * channels;
  std::memcpy(dst, src, static_cast<size_t>(height * row));
  if (height < 3 || width < 3) return;
  for (int64_t y = 1; y < height - 1; ++y) {
    const uint8_t* in = src + y * row;
    uint8_t* out = dst + y * row;
#pragma omp simd
    for (int64_t i = channels; i < row - channels; ++i) out[i] = smooth_value(in + i, row, channels);
  }
}

void histogram(const uint8_t* src, int64_t pixels, int64_t channels, int64_t* hist) {
  std::fill(hist, hist + 256 * channels, 0);
  for (int64_t i = 0; i < pixels; ++i)
    for (int64_t c = 0; c < channels; ++c) ++hist[c * 256 + src[i * channels + c]];
}

void apply_luts(const uint8_t* src, uint8_t* dst, int64_t pixels, int64_t channels, const uint8_t* luts) {
  for (int64_t i = 0; i < pixels; ++i)
    for (int64_t c = 0; c < channels; ++c) dst[i * channels + c] = luts[c * 256 + src[i * channels + c]];
}

void posterize_lut(int bits, uint8_t* lut) {
  for (int v = 0; v < 256; ++v) lut[v] = posterize_value(v, bits);
}

void solarize_lut(double threshold, uint8_t* lut) {
  for (int v = 0; v < 256; ++v) lut[v] = solarize_value(v, threshold);
}

void autocontrast_lut(const int64_t* hist, uint8_t* lut) { pixel_math::autocontrast_lut(hist, lut); }

void equalize_lut(const int64_t* hist, uint8_t* lut) { pixel_math::equalize_lut(hist, lut); }

}  // namespace mcdl::pixel_ops
