// The CPU loops of the RandAugment ops; the per-pixel formulas are kernels/augment_math.h's,
// which the CUDA kernels (kernels/cuda/augment.cu) share.
//
// The float passes (blend, smooth) also have an AVX-512 build, chosen at run time: the same loops
// vectorised sixteen float lanes wide (AVX-512BW for the bytes). Neither build may fuse a·b + c
// (Pillow rounds the product first), so both give the same bytes. clang (only `make fuzz` compiles
// with it) takes the baseline build.
#ifndef __clang__
#define MCDL_AUGMENT_SIXTEEN_LANES 1
#pragma GCC optimize("fp-contract=off")
#endif
#include "data/augment_ops.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "kernels/augment_math.h"
#include "kernels/cpu/cpu_features.h"

namespace mcdl::pixel_ops {
namespace {

using namespace pixel_math;

// copy_pixel with the channel count known to the compiler (3 or 1; 0: `c` at run time), so that
// the geometric ops copy a pixel in a few moves rather than a loop.
template <int Channels>
inline void copy_pixel_of(const uint8_t* src, uint8_t* dst, int64_t c) {
  if constexpr (Channels == 0) {
    copy_pixel(src, dst, c);
  } else {
    for (int k = 0; k < Channels; ++k) dst[k] = src[k];
  }
}

// ImagingScaleAffine: the valid x positions form one interval (they are monotone), the same for
// every row, so each row is copied as runs of output pixels that read consecutive source pixels
// (a translation is one run per row).
void scale_affine(const uint8_t* src, uint8_t* dst, int64_t h, int64_t w, int64_t c, const AffinePlan& p) {
  std::vector<int64_t> source_x(static_cast<size_t>(w)), source_y(static_cast<size_t>(h));
  scale_sources(p.x0, p.m0, w, source_x.data());
  scale_sources(p.y0, p.m4, h, source_y.data());
  struct Run {
    int64_t x, source, length;
  };
  std::vector<Run> runs;
  for (int64_t x = 0; x < w; ++x) {
    const int64_t xin = source_x[static_cast<size_t>(x)];
    if (xin < 0) continue;
    if (!runs.empty() && runs.back().x + runs.back().length == x && runs.back().source + runs.back().length == xin)
      ++runs.back().length;
    else
      runs.push_back({x, xin, 1});
  }
  for (int64_t y = 0; y < h; ++y) {
    const int64_t yin = source_y[static_cast<size_t>(y)];
    if (yin < 0) continue;
    for (const Run& run : runs)
      std::memcpy(dst + (y * w + run.x) * c, src + (yin * w + run.source) * c, static_cast<size_t>(run.length * c));
  }
}

// fixed_source's positions k2 + y·k1 + x·k0 and k5 + y·k4 + x·k3, stepped along the row by integer
// adds (the same integers: the closed form is exact).
template <int Channels>
void fixed_affine(const uint8_t* src, uint8_t* dst, int64_t h, int64_t w, int64_t c, const AffinePlan& p) {
  for (int64_t y = 0; y < h; ++y) {
    int64_t px = p.k2 + y * p.k1, py = p.k5 + y * p.k4;
    uint8_t* out = dst + y * w * c;
    for (int64_t x = 0; x < w; ++x, px += p.k0, py += p.k3) {
      const int64_t xin = px >> 16, yin = py >> 16;
      if (xin >= 0 && xin < w && yin >= 0 && yin < h)
        copy_pixel_of<Channels>(src + (yin * w + xin) * c, out + x * c, c);
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

// blend for alpha outside {0, 1}: truncation inside (0, 1), clip8 outside.
[[gnu::always_inline]] inline void blend_loop(const uint8_t* degenerate, const uint8_t* image, uint8_t* dst,
                                              int64_t count, float alpha) {
  if (alpha > 0.0f && alpha < 1.0f) {
#pragma omp simd
    for (int64_t i = 0; i < count; ++i)
      dst[i] = static_cast<uint8_t>(static_cast<int>(blend_float(degenerate[i], image[i], alpha)));
  } else {
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) dst[i] = clip8(blend_float(degenerate[i], image[i], alpha));
  }
}

// smooth's interior rows. smooth_value adds three lines per output byte: row y+1's and y−1's take
// the edge weight everywhere, so each row's edge line (the same floats) is computed once and used
// by both outputs that read it, kept in a ring of three lines of `row − 2·channels` floats.
[[gnu::always_inline]] inline void smooth_interior(const uint8_t* src, uint8_t* dst, int64_t height, int64_t row,
                                                   int64_t channels, float* ring) {
  const float edge = 1.0f / 13.0f, centre = 5.0f / 13.0f;
  const int64_t c = channels, n = row - 2 * c;
  const auto edge_line = [&](int64_t y) {
    const uint8_t* in = src + y * row + c;
    float* line = ring + (y % 3) * n;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) line[i] = smooth_line(in + i, c, edge, edge, edge);
  };
  edge_line(0);
  edge_line(1);
  for (int64_t y = 1; y < height - 1; ++y) {
    edge_line(y + 1);
    const float* below = ring + ((y + 1) % 3) * n;
    const float* above = ring + ((y - 1) % 3) * n;
    const uint8_t* in = src + y * row + c;
    uint8_t* out = dst + y * row + c;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float ss = add_rn(0.5f, below[i]);
      ss = add_rn(ss, smooth_line(in + i, c, edge, centre, edge));
      out[i] = clip8(add_rn(ss, above[i]));
    }
  }
}

#ifdef MCDL_AUGMENT_SIXTEEN_LANES
#define MCDL_SIXTEEN_LANES_TARGET gnu::target("avx512f,avx512bw,prefer-vector-width=512")
[[MCDL_SIXTEEN_LANES_TARGET]] void blend_sixteen_lanes(const uint8_t* degenerate, const uint8_t* image, uint8_t* dst,
                                                       int64_t count, float alpha) {
  blend_loop(degenerate, image, dst, count, alpha);
}
[[MCDL_SIXTEEN_LANES_TARGET]] void smooth_sixteen_lanes(const uint8_t* src, uint8_t* dst, int64_t height,
                                                        int64_t row, int64_t channels, float* ring) {
  smooth_interior(src, dst, height, row, channels, ring);
}
#undef MCDL_SIXTEEN_LANES_TARGET
#endif

}  // namespace

void affine_nearest(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width, int64_t channels,
                    const double m[6]) {
  std::memset(dst, 0, static_cast<size_t>(height * width * channels));
  const AffinePlan plan = plan_affine(m, height, width);
  switch (plan.path) {
    case affine_scale:
      return scale_affine(src, dst, height, width, channels, plan);
    case affine_fixed:
      if (channels == 3) return fixed_affine<3>(src, dst, height, width, channels, plan);
      if (channels == 1) return fixed_affine<1>(src, dst, height, width, channels, plan);
      return fixed_affine<0>(src, dst, height, width, channels, plan);
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
    return;
  }
#ifdef MCDL_AUGMENT_SIXTEEN_LANES
  if (cpu::has_avx512bw()) return blend_sixteen_lanes(degenerate, image, dst, count, alpha);
#endif
  blend_loop(degenerate, image, dst, count, alpha);
}

void grey_rgb(const uint8_t* rgb, uint8_t* dst, int64_t pixels) {
  for (int64_t i = 0; i < 3 * pixels; i += 3) {
    const auto l = static_cast<uint8_t>(luma(rgb[i], rgb[i + 1], rgb[i + 2]));
    dst[i] = l, dst[i + 1] = l, dst[i + 2] = l;
  }
}

int contrast_grey_level(const uint8_t* src, int64_t pixels, int64_t channels) {
  int64_t sum = 0;  // Σ v·count(v): exact, as Python's float sum of integers below 2^53
  if (channels == 3) {
    for (int64_t i = 0; i < 3 * pixels; i += 3) sum += luma(src[i], src[i + 1], src[i + 2]);
    return grey_level(sum, pixels);
  }
  for (int64_t i = 0; i < pixels; ++i) sum += luma_of(src + channels * i, channels);
  return grey_level(sum, pixels);
}

void smooth(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width, int64_t channels) {
  const int64_t row = width * channels;
  std::memcpy(dst, src, static_cast<size_t>(height * row));
  if (height < 3 || width < 3) return;
  std::vector<float> edge_lines(static_cast<size_t>(3 * (row - 2 * channels)));
#ifdef MCDL_AUGMENT_SIXTEEN_LANES
  if (cpu::has_avx512bw()) return smooth_sixteen_lanes(src, dst, height, row, channels, edge_lines.data());
#endif
  smooth_interior(src, dst, height, row, channels, edge_lines.data());
}

void histogram(const uint8_t* src, int64_t pixels, int64_t channels, int64_t* hist) {
  std::fill(hist, hist + 256 * channels, 0);
  if (channels == 3) {
    // Odd pixels count into a table of their own, added at the end, so that neighbours of one value
    // (most of an image's) do not wait on each other's increment of one bin.
    std::array<int64_t, 768> odd{};
    int64_t i = 0;
    for (; i + 2 <= pixels; i += 2, src += 6) {
      ++hist[src[0]], ++hist[256 + src[1]], ++hist[512 + src[2]];
      ++odd[src[3]], ++odd[256 + src[4]], ++odd[512 + src[5]];
    }
    if (i < pixels) ++hist[src[0]], ++hist[256 + src[1]], ++hist[512 + src[2]];
    for (size_t k = 0; k < odd.size(); ++k) hist[k] += odd[k];
    return;
  }
  for (int64_t i = 0; i < pixels; ++i)
    for (int64_t c = 0; c < channels; ++c) ++hist[c * 256 + src[i * channels + c]];
}

void apply_luts(const uint8_t* src, uint8_t* dst, int64_t pixels, int64_t channels, const uint8_t* luts) {
  if (channels == 3) {
    const uint8_t *red = luts, *green = luts + 256, *blue = luts + 512;
    for (int64_t i = 0; i < 3 * pixels; i += 3)
      dst[i] = red[src[i]], dst[i + 1] = green[src[i + 1]], dst[i + 2] = blue[src[i + 2]];
    return;
  }
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
