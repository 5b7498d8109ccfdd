// The per-pixel arithmetic of the RandAugment ops (Pillow 9.4) and of ToTensor + Normalize, as
// inline functions shared by the CPU path (data/augment_ops.cpp) and the CUDA kernels
// (kernels/cuda/augment.cu): one definition of each formula, so both devices give the same bytes.
//
// Floating point: every float and double operation rounds once, in Pillow's order. On the device
// the helpers below use the _rn intrinsics, which nvcc never contracts into an FMA (it would
// contract a·b + c by default and round once instead of twice); the host build has no FMA
// contraction (-std=c++20 implies -ffp-contract=off). Divisions are IEEE-exact on both sides
// (nvcc's default -prec-div=true for float; double division is always exact).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"

namespace mcdl::pixel_math {

// ---- once-rounded arithmetic ------------------------------------------------------------------
MCDL_HOST_DEVICE inline float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
MCDL_HOST_DEVICE inline float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
MCDL_HOST_DEVICE inline double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
MCDL_HOST_DEVICE inline double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

MCDL_HOST_DEVICE inline void copy_pixel(const uint8_t* src, uint8_t* dst, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) dst[c] = src[c];
}

// Pillow's clip8 of a float: ≤ 0 → 0, ≥ 255 → 255, else truncation.
// Written as clamp-then-truncate (the same result for every non-NaN v) so that loops over it vectorise.
MCDL_HOST_DEVICE inline uint8_t clip8(float v) {
  return static_cast<uint8_t>(static_cast<int>(v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v)));
}

// ---- geometry (Pillow Geometry.c) --------------------------------------------------------------

// Pillow's COORD(v): −1 for positions outside [0, size), else the truncation.
MCDL_HOST_DEVICE inline int64_t coord(double v, int64_t size) {
  if (v < 0.0 || v >= static_cast<double>(size)) return -1;
  return static_cast<int64_t>(v);
}

enum AffinePath : int32_t { affine_scale, affine_fixed, affine_float };

// ImagingTransformAffine's choice of path for an inverse map m (see data/augment_ops.h) on a
// height × width image, and each path's starting positions, computed once on the host.
struct AffinePlan {
  int32_t path = affine_scale;
  // scale: pixel-centre positions start + k·step, stepped by adds (x0, m0 across; y0, m4 down);
  // float: the position of pixel (0, 0) is (x0, y0), stepped by (m0, m3) across and (m1, m4) down.
  double x0 = 0, y0 = 0, m0 = 0, m1 = 0, m3 = 0, m4 = 0;
  // fixed: 16.16 positions of pixel (x, y): (k2 + y·k1 + x·k0, k5 + y·k4 + x·k3) (integer steps
  // in Pillow, so the closed form is exact).
  int64_t k0 = 0, k1 = 0, k2 = 0, k3 = 0, k4 = 0, k5 = 0;
};

inline AffinePlan plan_affine(const double m[6], int64_t height, int64_t width) {
  const auto fits = [m](double x, double y) {
    return std::fabs(x * m[0] + y * m[1] + m[2]) < 32768.0 && std::fabs(x * m[3] + y * m[4] + m[5]) < 32768.0;
  };
  const auto w = static_cast<double>(width), h = static_cast<double>(height);
  AffinePlan plan;
  plan.m0 = m[0], plan.m1 = m[1], plan.m3 = m[3], plan.m4 = m[4];
  if (m[1] == 0 && m[3] == 0) {
    plan.path = affine_scale;
    plan.x0 = m[2] + m[0] * 0.5;
    plan.y0 = m[5] + m[4] * 0.5;
  } else if (fits(0, 0) && fits(w, h) && fits(0, h) && fits(w, 0)) {
    const auto fix = [](double v) { return static_cast<int64_t>(std::floor(v * 65536.0 + 0.5)); };
    plan.path = affine_fixed;
    plan.k0 = fix(m[0]), plan.k1 = fix(m[1]), plan.k3 = fix(m[3]), plan.k4 = fix(m[4]);
    plan.k2 = fix(m[2] + m[0] * 0.5 + m[1] * 0.5);
    plan.k5 = fix(m[5] + m[3] * 0.5 + m[4] * 0.5);
  } else {
    plan.path = affine_float;
    plan.x0 = m[2] + m[1] * 0.5 + m[0] * 0.5;
    plan.y0 = m[5] + m[4] * 0.5 + m[3] * 0.5;
  }
  return plan;
}

// Scale path: the source index (or −1) of each of `size` pixel centres start, start + step, ...
// (Pillow steps the position by repeated adds, so this is sequential).
template <class Index>
MCDL_HOST_DEVICE inline void scale_sources(double start, double step, int64_t size, Index* out) {
  double v = start;
  for (int64_t k = 0; k < size; ++k) {
    out[k] = static_cast<Index>(coord(v, size));
    v = add_rn(v, step);
  }
}

// Fixed path: the source pixel of output (x, y); false outside the source.
MCDL_HOST_DEVICE inline bool fixed_source(const AffinePlan& p, int64_t x, int64_t y, int64_t height, int64_t width,
                                          int64_t& sx, int64_t& sy) {
  sx = (p.k2 + y * p.k1 + x * p.k0) >> 16;
  sy = (p.k5 + y * p.k4 + x * p.k3) >> 16;
  return sx >= 0 && sx < width && sy >= 0 && sy < height;
}

// Float path: the start of row y, (x0, y0) stepped y times by (m1, m4).
MCDL_HOST_DEVICE inline void float_row_start(const AffinePlan& p, int64_t y, double& xx, double& yy) {
  xx = p.x0, yy = p.y0;
  for (int64_t k = 0; k < y; ++k) xx = add_rn(xx, p.m1), yy = add_rn(yy, p.m4);
}
// Float path: one output row from its start, positions stepped by (m0, m3); pixels outside the
// source are left as they are (the caller zero-fills).
MCDL_HOST_DEVICE inline void float_affine_row(const uint8_t* src, uint8_t* dst_row, int64_t height, int64_t width,
                                              int64_t channels, const AffinePlan& p, double xx, double yy) {
  for (int64_t x = 0; x < width; ++x) {
    const int64_t xin = coord(xx, width), yin = coord(yy, height);
    if (xin >= 0 && yin >= 0) copy_pixel(src + (yin * width + xin) * channels, dst_row + x * channels, channels);
    xx = add_rn(xx, p.m0);
    yy = add_rn(yy, p.m3);
  }
}

// Image.transpose: the source of output (x, y) for ROTATE_90 (1, counter-clockwise; square
// images), ROTATE_180 (2), ROTATE_270 (3).
MCDL_HOST_DEVICE inline void quarter_turn_source(int64_t x, int64_t y, int64_t height, int64_t width,
                                                 int quarter_turns, int64_t& sx, int64_t& sy) {
  sx = x, sy = y;
  if (quarter_turns == 1) sx = width - 1 - y, sy = x;
  else if (quarter_turns == 2) sx = width - 1 - x, sy = height - 1 - y;
  else if (quarter_turns == 3) sx = y, sy = height - 1 - x;
}

// ---- colour (Blend.c, Convert.c, Filter.c, ImageStat) -------------------------------------------

// Image.blend(degenerate, image, alpha) of one byte.
// Its float value d + alpha·(i − d), before truncation or clipping.
MCDL_HOST_DEVICE inline float blend_float(int degenerate, int image, float alpha) {
  return add_rn(static_cast<float>(degenerate), mul_rn(alpha, static_cast<float>(image - degenerate)));
}
MCDL_HOST_DEVICE inline uint8_t blend_value(int degenerate, int image, float alpha) {
  if (alpha == 0.0f) return static_cast<uint8_t>(degenerate);
  if (alpha == 1.0f) return static_cast<uint8_t>(image);
  const float t = blend_float(degenerate, image, alpha);
  if (alpha >= 0.0f && alpha <= 1.0f) return static_cast<uint8_t>(t);
  return clip8(t);
}

// convert("L") of one RGB pixel (ITU-R 601-2 in 16-bit fixed point).
MCDL_HOST_DEVICE inline int luma(int r, int g, int b) { return (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16; }
// The L value of a pixel of a 3- or 1-channel image.
MCDL_HOST_DEVICE inline int luma_of(const uint8_t* p, int64_t channels) {
  return channels == 3 ? luma(p[0], p[1], p[2]) : p[0];
}

// ImageEnhance.Contrast's grey level from Σ L over `pixels` pixels: int(mean + 0.5).
MCDL_HOST_DEVICE inline int grey_level(int64_t luma_sum, int64_t pixels) {
  return static_cast<int>(add_rn(static_cast<double>(luma_sum) / static_cast<double>(pixels), 0.5));
}

// One row of filter(SMOOTH)'s kernel: k0·q(x−1) + k1·q(x) + k2·q(x+1), left to right.
MCDL_HOST_DEVICE inline float smooth_line(const uint8_t* q, int64_t channels, float k0, float k1, float k2) {
  return add_rn(add_rn(mul_rn(static_cast<float>(q[-channels]), k0), mul_rn(static_cast<float>(q[0]), k1)),
                mul_rn(static_cast<float>(q[channels]), k2));
}
// filter(SMOOTH) ([[1,1,1],[1,5,1],[1,1,1]]/13 in float32) of the interior byte at p (rows of
// `row` bytes, pixels of `channels` bytes): clip8(0.5 + line(y+1) + line(y) + line(y−1)).
MCDL_HOST_DEVICE inline uint8_t smooth_value(const uint8_t* p, int64_t row, int64_t channels) {
  const float edge = 1.0f / 13.0f, centre = 5.0f / 13.0f;
  float ss = 0.5f;
  ss = add_rn(ss, smooth_line(p + row, channels, edge, edge, edge));
  ss = add_rn(ss, smooth_line(p, channels, edge, centre, edge));
  ss = add_rn(ss, smooth_line(p - row, channels, edge, edge, edge));
  return clip8(ss);
}
// Whether filter(SMOOTH) copies pixel (x, y) unchanged: the border, or an image under 3×3.
MCDL_HOST_DEVICE inline bool smooth_copies(int64_t x, int64_t y, int64_t height, int64_t width) {
  return height < 3 || width < 3 || x == 0 || y == 0 || x == width - 1 || y == height - 1;
}

// ---- lookup tables (ImageOps) -------------------------------------------------------------------

// ImageOps.posterize: v & ~(2^(8 − bits) − 1), bits in [0, 8].
MCDL_HOST_DEVICE inline uint8_t posterize_value(int v, int bits) {
  return static_cast<uint8_t>(v & ~((1 << (8 - bits)) - 1));
}
// ImageOps.solarize: v < threshold ? v : 255 − v.
MCDL_HOST_DEVICE inline uint8_t solarize_value(int v, double threshold) {
  return static_cast<uint8_t>(v < threshold ? v : 255 - v);
}

// ImageOps.autocontrast(cutoff=0) for one channel's histogram: lo/hi = first/last non-empty bin;
// identity if hi ≤ lo, else lut[v] = clamp(int(v·s + (−lo)·s), 0, 255), s = 255.0/(hi − lo).
template <class Count>
MCDL_HOST_DEVICE inline void autocontrast_lut(const Count* hist, uint8_t* lut) {
  int lo = 0, hi = 255;
  while (lo < 255 && hist[lo] == 0) ++lo;
  while (hi > 0 && hist[hi] == 0) --hi;
  if (hi <= lo) {
    for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v);
    return;
  }
  const double scale = 255.0 / (hi - lo), offset = mul_rn(static_cast<double>(-lo), scale);
  for (int v = 0; v < 256; ++v) {
    const auto mapped = static_cast<int64_t>(add_rn(mul_rn(static_cast<double>(v), scale), offset));  // truncation
    lut[v] = static_cast<uint8_t>(mapped < 0 ? 0 : mapped > 255 ? 255 : mapped);
  }
}

// ImageOps.equalize for one channel: identity with fewer than 2 non-empty bins or when
// step = (Σ hist − last non-empty count) // 255 is 0; else lut[i] = min(255, n_i // step) with
// n_0 = step // 2, n_{i+1} = n_i + hist[i].
template <class Count>
MCDL_HOST_DEVICE inline void equalize_lut(const Count* hist, uint8_t* lut) {
  int64_t total = 0, last = 0, nonempty = 0;
  for (int v = 0; v < 256; ++v) {
    if (hist[v] == 0) continue;
    total += static_cast<int64_t>(hist[v]);
    last = static_cast<int64_t>(hist[v]);
    ++nonempty;
  }
  const int64_t step = nonempty <= 1 ? 0 : (total - last) / 255;
  if (step == 0) {
    for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v);
    return;
  }
  int64_t n = step / 2;
  for (int v = 0; v < 256; ++v) {
    const int64_t q = n / step;
    lut[v] = static_cast<uint8_t>(q < 255 ? q : 255);
    n += static_cast<int64_t>(hist[v]);
  }
}

// ---- ToTensor + Normalize -----------------------------------------------------------------------

// (float(v)/255 − mean)/std in float32: a true division, a subtraction, a division, as
// torchvision's to_tensor and normalize (and data/transforms.cpp's to_tensor_normalize).
MCDL_HOST_DEVICE inline float normalize_value(int v, float mean, float std) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(__fsub_rn(__fdiv_rn(static_cast<float>(v), 255.0f), mean), std);
#else
  return (static_cast<float>(v) / 255.0f - mean) / std;
#endif
}

}  // namespace mcdl::pixel_math
