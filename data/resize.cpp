// Pillow 9.4 `src/libImaging/Resample.c`, 8-bit path, BICUBIC filter, box = whole image:
//   - per axis, output index xx has centre (xx + 0.5)·scale with scale = in/out; when
//     downsampling the kernel is stretched by the scale (filterscale = max(scale, 1)), which is
//     what makes PIL's resize antialiased;
//   - taps xmin .. xmin+count-1 with xmin = (int)(centre − support + 0.5) clamped to 0 and the end
//     (int)(centre + support + 0.5) clamped to `in`; weights Keys(a = −0.5) normalised to sum 1
//     in double, then converted to 22-bit fixed point rounding half away from zero;
//   - horizontal pass first (only over the source rows the vertical pass reads), its result
//     rounded and clipped to uint8, then the vertical pass; a pass whose size is unchanged is
//     skipped.
#include "data/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/error.h"

namespace mcdl {
namespace {

constexpr int precision_bits = 22;  // PRECISION_BITS = 32 − 8 − 2

double bicubic_kernel(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// The fixed-point taps of one axis: output index i reads `count[i]` inputs from `first[i]`,
// with weights weights[i·taps .. i·taps + count[i]).
struct AxisCoefficients {
  int64_t taps = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

AxisCoefficients precompute_coefficients(int64_t in_size, int64_t out_size) {
  // Pillow's box is float[4]; (in1 − in0) is a float subtraction, exact for sizes < 2^24.
  const float in0 = 0.0f, in1 = static_cast<float>(in_size);
  const double scale = static_cast<double>(in1 - in0) / static_cast<double>(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = 2.0 * filterscale;
  AxisCoefficients c;
  c.taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<size_t>(out_size));
  c.count.resize(static_cast<size_t>(out_size));
  c.weights.assign(static_cast<size_t>(out_size * c.taps), 0);
  std::vector<double> k(static_cast<size_t>(c.taps));
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (static_cast<double>(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = static_cast<int>(in_size);
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double w = bicubic_kernel((x + xmin - center + 0.5) * ss);
      k[static_cast<size_t>(x)] = w;
      ww += w;
    }
    int32_t* fixed = &c.weights[static_cast<size_t>(xx * c.taps)];
    for (int x = 0; x < xmax; ++x) {
      double w = k[static_cast<size_t>(x)];
      if (ww != 0.0) w /= ww;
      fixed[x] = w < 0 ? static_cast<int32_t>(-0.5 + w * (1 << precision_bits))
                       : static_cast<int32_t>(0.5 + w * (1 << precision_bits));
    }
    c.first[static_cast<size_t>(xx)] = xmin;
    c.count[static_cast<size_t>(xx)] = xmax;
  }
  return c;
}

// Pillow's clip8: the accumulator shifted down by 22 bits, clamped to [0, 255].
inline uint8_t clip_fixed(int32_t acc) {
  const int32_t v = acc >> precision_bits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// out[y][x][ch] for rows [row0, row0 + out.height) of `in`, resampled along x. RGB has its own
// loop with three named accumulators (as Pillow's), which the compiler keeps in registers.
void horizontal_pass(const Image& in, int64_t row0, const AxisCoefficients& c, Image& out) {
  const int64_t channels = in.channels;
  for (int64_t y = 0; y < out.height; ++y) {
    const uint8_t* src = &in.pixels[static_cast<size_t>((y + row0) * in.width * channels)];
    uint8_t* dst = &out.pixels[static_cast<size_t>(y * out.width * channels)];
    for (int64_t x = 0; x < out.width; ++x) {
      const int32_t* k = &c.weights[static_cast<size_t>(x * c.taps)];
      const uint8_t* s = src + c.first[static_cast<size_t>(x)] * channels;
      const int count = c.count[static_cast<size_t>(x)];
      int32_t acc0 = 1 << (precision_bits - 1), acc1 = acc0, acc2 = acc0;
      if (channels == 3) {
        for (int i = 0; i < count; ++i) {
          acc0 += s[3 * i] * k[i];
          acc1 += s[3 * i + 1] * k[i];
          acc2 += s[3 * i + 2] * k[i];
        }
        dst[3 * x] = clip_fixed(acc0);
        dst[3 * x + 1] = clip_fixed(acc1);
        dst[3 * x + 2] = clip_fixed(acc2);
      } else {
        for (int i = 0; i < count; ++i) acc0 += s[i] * k[i];
        dst[x] = clip_fixed(acc0);
      }
    }
  }
}

// out[y] from rows c.first[y] − row0 ... of `in`, resampled along y. The taps run outermost, each
// adding one source row into the whole output row, so that the sums vectorise along the row
// (integer sums, within int32 as Pillow's: their order does not change them).
void vertical_pass(const Image& in, int64_t row0, const AxisCoefficients& c, Image& out) {
  const int64_t row = in.width * in.channels;
  std::vector<int32_t> acc(static_cast<size_t>(row));
  for (int64_t y = 0; y < out.height; ++y) {
    const int32_t* k = &c.weights[static_cast<size_t>(y * c.taps)];
    const uint8_t* src = &in.pixels[static_cast<size_t>((c.first[static_cast<size_t>(y)] - row0) * row)];
    const int count = c.count[static_cast<size_t>(y)];
    uint8_t* dst = &out.pixels[static_cast<size_t>(y * row)];
    std::fill(acc.begin(), acc.end(), 1 << (precision_bits - 1));
    for (int t = 0; t < count; ++t) {
      const uint8_t* tap_row = src + t * row;
      const int32_t weight = k[t];
      for (int64_t i = 0; i < row; ++i) acc[static_cast<size_t>(i)] += tap_row[i] * weight;
    }
    for (int64_t i = 0; i < row; ++i) dst[i] = clip_fixed(acc[static_cast<size_t>(i)]);
  }
}

}  // namespace

Image resize_bicubic(const Image& image, int64_t out_width, int64_t out_height) {
  check(image.height > 0 && image.width > 0 && (image.channels == 1 || image.channels == 3),
        "resize_bicubic: bad input image ", image.height, "x", image.width, "x", image.channels);
  check(out_width > 0 && out_height > 0, "resize_bicubic: output size must be positive, got ", out_width, "x",
        out_height);
  const bool need_horizontal = out_width != image.width;
  const bool need_vertical = out_height != image.height;
  if (!need_horizontal && !need_vertical) return image;

  const AxisCoefficients vertical = precompute_coefficients(image.height, out_height);
  // First and one-past-last source rows the vertical pass reads.
  const int64_t row_first = vertical.first.front();
  const int64_t row_last = vertical.first.back() + vertical.count.back();

  Image horizontal_result;
  const Image* source = &image;
  int64_t source_row0 = 0;
  if (need_horizontal) {
    const AxisCoefficients horizontal = precompute_coefficients(image.width, out_width);
    const int64_t rows = need_vertical ? row_last - row_first : image.height;
    source_row0 = need_vertical ? row_first : 0;
    horizontal_result = Image(rows, out_width, image.channels);
    horizontal_pass(image, source_row0, horizontal, horizontal_result);
    if (!need_vertical) return horizontal_result;
    source = &horizontal_result;
  }
  Image out(out_height, source->width, image.channels);
  vertical_pass(*source, source_row0, vertical, out);
  return out;
}

ImageSize shorter_side_output_size(int64_t height, int64_t width, int64_t size) {
  check(size > 0 && height > 0 && width > 0, "resize_shorter_side: size ", size, " of a ", height, "x", width,
        " image");
  const bool width_shorter = width <= height;
  const int64_t shorter = width_shorter ? width : height, longer = width_shorter ? height : width;
  // Python: int(size * long / short), a true division in double then truncation.
  const auto new_long = static_cast<int64_t>(static_cast<double>(size * longer) / static_cast<double>(shorter));
  return width_shorter ? ImageSize{new_long, size} : ImageSize{size, new_long};
}

Image resize_shorter_side(const Image& image, int64_t size) {
  const ImageSize out = shorter_side_output_size(image.height, image.width, size);
  return resize_bicubic(image, out.width, out.height);
}

}  // namespace mcdl
