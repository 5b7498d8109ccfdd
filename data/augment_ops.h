// The pixel arithmetic of the RandAugment ops, bit-exact against Pillow 9.4 on 8-bit "RGB" and
// "L" images. Plain functions over interleaved (HWC) uint8 buffers: each is self-contained integer
// or float32 arithmetic with no allocation, ready to be ported one-to-one to device kernels
// (every output element depends only on the inputs and the scalar parameters listed).
//
// Floating-point note: Pillow's float expressions are evaluated here in the same order and in the
// same precision (double for geometry, float32 for blends and filters). The per-pixel formulas
// live in kernels/augment_math.h, shared with the CUDA kernels: there every operation is a
// once-rounded _rn intrinsic (__fmul_rn, __fadd_rn, ...), which nvcc never contracts into an FMA,
// so the kernels need no --fmad=false and give the same bytes as this CPU path.
#pragma once
#include <cstdint>

namespace mcdl::pixel_ops {

// ---- geometry (Pillow Geometry.c) --------------------------------------------------------
// Image.transform(size, AFFINE, m, NEAREST) with a black canvas: the output pixel (x, y) reads the
// source at (m0·x' + m1·y' + m2, m3·x' + m4·y' + m5), x' = x + 0.5, y' = y + 0.5, floored; outside
// the source it stays 0. Three paths as in ImagingTransformAffine, chosen on the host:
//   - m1 = m3 = 0 (pure scale/translate): ImagingScaleAffine, per-axis double positions;
//   - the four corners map inside ±32768: affine_fixed, 16.16 fixed point
//     (k = floor(v·65536 + 0.5), positions stepped by integer adds, source index = pos >> 16);
//   - otherwise double positions stepped by adds.
void affine_nearest(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width, int64_t channels,
                    const double m[6]);
// Image.transpose: ROTATE_90 (counter-clockwise; square images only), ROTATE_180, ROTATE_270.
void rotate_quarter_turns(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width, int64_t channels,
                          int quarter_turns);

// ---- colour (Pillow Blend.c, Convert.c, Filter.c, ImageStat, ImageEnhance) --------------
// Image.blend(degenerate, image, alpha) over `count` bytes, alpha in float32:
//   alpha = 0 → degenerate, alpha = 1 → image;
//   0 < alpha < 1: out = (uint8)(float(d) + alpha·float(i − d))  (truncation);
//   otherwise: t = float(d) + alpha·float(i − d), out = t ≤ 0 ? 0 : t ≥ 255 ? 255 : (uint8)t.
void blend(const uint8_t* degenerate, const uint8_t* image, uint8_t* dst, int64_t count, float alpha);
// convert("L").convert("RGB"): each channel of a pixel its L = (R·19595 + G·38470 + B·7471 + 0x8000) >> 16.
void grey_rgb(const uint8_t* rgb, uint8_t* dst, int64_t pixels);
// ImageEnhance.Contrast's grey level: int(mean(L) + 0.5), the mean of the L image (the image
// itself when 1-channel) computed as Σ v·count(v) / pixels in double.
int contrast_grey_level(const uint8_t* src, int64_t pixels, int64_t channels);
// filter(SMOOTH): 3×3 kernel [[1,1,1],[1,5,1],[1,1,1]]/13 in float32 (weights 1/13f and 5/13f),
// per channel ss = 0.5f + row(y+1) + row(y) + row(y−1), each row k0·p(x−1) + k1·p(x) + k2·p(x+1)
// left to right; out = clip8(ss) (≤0 → 0, ≥255 → 255, else truncation). The first and last rows
// and columns are copied unchanged; images under 3×3 are copied whole.
void smooth(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width, int64_t channels);

// ---- lookup tables (ImageOps) ------------------------------------------------------------
// hist[c·256 + v] = number of pixels with value v in channel c.
void histogram(const uint8_t* src, int64_t pixels, int64_t channels, int64_t* hist);
// dst = luts[c·256 + src] per channel.
void apply_luts(const uint8_t* src, uint8_t* dst, int64_t pixels, int64_t channels, const uint8_t* luts);
// ImageOps.posterize: v & ~(2^(8 − bits) − 1), bits in [0, 8].
void posterize_lut(int bits, uint8_t* lut);
// ImageOps.solarize: v < threshold ? v : 255 − v.
void solarize_lut(double threshold, uint8_t* lut);
// ImageOps.autocontrast(cutoff=0) for one channel's histogram: lo/hi = first/last non-empty bin;
// identity if hi ≤ lo, else lut[v] = clamp(int(v·s + (−lo)·s), 0, 255), s = 255.0/(hi − lo).
void autocontrast_lut(const int64_t* hist, uint8_t* lut);
// ImageOps.equalize for one channel: identity with fewer than 2 non-empty bins or when
// step = (Σ hist − last non-empty count) // 255 is 0; else lut[i] = min(255, n_i // step) with
// n_0 = step // 2, n_{i+1} = n_i + hist[i] (Pillow clips the table to uint8).
void equalize_lut(const int64_t* hist, uint8_t* lut);

}  // namespace mcdl::pixel_ops
