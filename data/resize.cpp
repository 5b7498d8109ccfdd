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
// Both passes here run one loop, over whole rows (the horizontal pass on transposed rows), so
// that the compiler vectorises it; the sums are the same integers, so the bytes are Pillow's.
#include "data/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/error.h"
#include "kernels/cpu/cpu_features.h"

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

// Output row r is Σ_t weight[r][t] · (input row first[r] + t − row0), over whole rows of `row`
// bytes. The taps run outermost, each adding one input row into the whole output row, so that
// the sums vectorise along the row. They are integer sums within int32, as Pillow's, so their
// order does not change them, nor does the vector width.
inline void resample_rows_loop(const uint8_t* in, int64_t row, int64_t row0, const AxisCoefficients& c,
                               int64_t out_rows, uint8_t* out, int32_t* acc) {
  for (int64_t r = 0; r < out_rows; ++r) {
    const int32_t* k = &c.weights[static_cast<size_t>(r * c.taps)];
    const uint8_t* src = in + (c.first[static_cast<size_t>(r)] - row0) * row;
    const int count = c.count[static_cast<size_t>(r)];
    uint8_t* dst = out + r * row;
    std::fill(acc, acc + row, 1 << (precision_bits - 1));
    for (int t = 0; t < count; ++t) {
      const uint8_t* tap_row = src + t * row;
      const int32_t weight = k[t];
      for (int64_t i = 0; i < row; ++i) acc[i] += tap_row[i] * weight;
    }
    for (int64_t i = 0; i < row; ++i) dst[i] = clip_fixed(acc[i]);
  }
}

#ifndef __clang__  // clang (only `make fuzz` compiles with it) takes the baseline build
[[gnu::target("avx512f,avx512bw,prefer-vector-width=512")]] void resample_rows_sixteen_lanes(
    const uint8_t* in, int64_t row, int64_t row0, const AxisCoefficients& c, int64_t out_rows, uint8_t* out,
    int32_t* acc) {
  resample_rows_loop(in, row, row0, c, out_rows, out, acc);
}
[[gnu::target("avx2")]] void resample_rows_eight_lanes(const uint8_t* in, int64_t row, int64_t row0,
                                                       const AxisCoefficients& c, int64_t out_rows, uint8_t* out,
                                                       int32_t* acc) {
  resample_rows_loop(in, row, row0, c, out_rows, out, acc);
}
#endif

// resample_rows_loop built for AVX-512 or AVX2 where the processor has them: baseline x86-64 has
// no 32-bit lane multiply, and its build runs at a third to a half of their speed. `acc` holds
// `row` sums.
void resample_rows(const uint8_t* in, int64_t row, int64_t row0, const AxisCoefficients& c, int64_t out_rows,
                   uint8_t* out, int32_t* acc) {
#ifndef __clang__
  if (cpu::has_avx512bw()) return resample_rows_sixteen_lanes(in, row, row0, c, out_rows, out, acc);
  if (cpu::has_avx2()) return resample_rows_eight_lanes(in, row, row0, c, out_rows, out, acc);
#endif
  resample_rows_loop(in, row, row0, c, out_rows, out, acc);
}

// dst (width × height pixels) is src (height × width pixels) transposed, in tiles that keep both
// sides in cache: for_each_tile calls body(y0, y1, x0, x1) for each tile of the source.
// Three-byte pixels travel as four bytes (the fourth is the next pixel's first byte, or padding,
// and is never read back): a four-byte copy is one load and one store. The last pixel of a row
// is read or written as three bytes, so that no copy reaches past an image nor overwrites a row
// already written.
template <typename Body>
void for_each_tile(int64_t height, int64_t width, Body body) {
  constexpr int64_t tile = 16;
  for (int64_t y0 = 0; y0 < height; y0 += tile)
    for (int64_t x0 = 0; x0 < width; x0 += tile) body(y0, std::min(height, y0 + tile), x0, std::min(width, x0 + tile));
}

void transpose_rgb_to_padded(const uint8_t* src, int64_t height, int64_t width, uint8_t* dst) {
  for_each_tile(height, width, [&](int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
    const int64_t whole = std::min(x1, width - 1);  // pixels copied as four bytes
    for (int64_t y = y0; y < y1; ++y) {
      const uint8_t* s = src + y * width * 3;
      for (int64_t x = x0; x < whole; ++x) std::memcpy(dst + (x * height + y) * 4, s + 3 * x, 4);
      if (x1 == width) std::memcpy(dst + ((width - 1) * height + y) * 4, s + 3 * (width - 1), 3);
    }
  });
}

void transpose_padded_to_rgb(const uint8_t* src, int64_t height, int64_t width, uint8_t* dst) {
  for_each_tile(height, width, [&](int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
    const int64_t whole = std::min(y1, height - 1);  // pixels written as four bytes
    for (int64_t x = x0; x < x1; ++x) {
      uint8_t* d = dst + x * height * 3;
      for (int64_t y = y0; y < whole; ++y) std::memcpy(d + 3 * y, src + (y * width + x) * 4, 4);
      if (y1 == height) std::memcpy(d + 3 * (height - 1), src + ((height - 1) * width + x) * 4, 3);
    }
  });
}

void transpose_grey(const uint8_t* src, int64_t height, int64_t width, uint8_t* dst) {
  for_each_tile(height, width, [&](int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
    for (int64_t y = y0; y < y1; ++y)
      for (int64_t x = x0; x < x1; ++x) dst[x * height + y] = src[y * width + x];
  });
}

// Buffers kept by each thread between calls. A fresh allocation of an image's size is a fresh
// mapping from the kernel, whose page faults cost as much as the resampling itself. Buffers past
// 4 MB (photos of over a megapixel, whose decoding costs more) are given back after each call.
struct ResizeScratch {
  std::vector<uint8_t> columns, resampled, horizontal;
  std::vector<int32_t> sums;  // resample_rows' accumulators
  template <typename T>
  static T* grown(std::vector<T>& buffer, int64_t size) {
    if (static_cast<size_t>(size) > buffer.size()) buffer.resize(static_cast<size_t>(size));
    return buffer.data();
  }
  void trim() {
    constexpr size_t kept = size_t{4} << 20;
    for (auto* buffer : {&columns, &resampled, &horizontal})
      if (buffer->capacity() > kept) std::vector<uint8_t>().swap(*buffer);
    if (sums.capacity() * sizeof(int32_t) > kept) std::vector<int32_t>().swap(sums);
  }
};

// rows × out_width pixels at `out`: rows [row0, row0 + rows) of `in` resampled along x. The rows
// are transposed, resampled along y with the vertical pass's loop, and transposed back: a direct
// loop reads a handful of taps per output pixel and does not vectorise; this one does, and the
// two transposes cost less than the difference.
void horizontal_pass(const Image& in, int64_t row0, int64_t rows, const AxisCoefficients& c, int64_t out_width,
                     ResizeScratch& scratch, uint8_t* out) {
  const uint8_t* src = &in.pixels[static_cast<size_t>(row0 * in.width * in.channels)];
  const int64_t lanes = in.channels == 3 ? 4 : 1;  // bytes per pixel while transposed
  uint8_t* columns = ResizeScratch::grown(scratch.columns, in.width * rows * lanes);
  uint8_t* resampled = ResizeScratch::grown(scratch.resampled, out_width * rows * lanes);
  int32_t* sums = ResizeScratch::grown(scratch.sums, rows * lanes);
  if (lanes == 4) transpose_rgb_to_padded(src, rows, in.width, columns);
  else transpose_grey(src, rows, in.width, columns);
  resample_rows(columns, rows * lanes, 0, c, out_width, resampled, sums);
  if (lanes == 4) transpose_padded_to_rgb(resampled, out_width, rows, out);
  else transpose_grey(resampled, out_width, rows, out);
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

  thread_local ResizeScratch scratch;
  const uint8_t* source = image.pixels.data();
  int64_t source_row0 = 0;
  Image out(out_height, out_width, image.channels);
  if (need_horizontal) {
    const AxisCoefficients horizontal = precompute_coefficients(image.width, out_width);
    const int64_t rows = need_vertical ? row_last - row_first : image.height;
    source_row0 = need_vertical ? row_first : 0;
    uint8_t* result =
        need_vertical ? ResizeScratch::grown(scratch.horizontal, rows * out_width * image.channels) : out.pixels.data();
    horizontal_pass(image, source_row0, rows, horizontal, out_width, scratch, result);
    source = result;
  }
  if (need_vertical) {
    const int64_t row = out_width * image.channels;
    resample_rows(source, row, source_row0, vertical, out_height, out.pixels.data(),
                  ResizeScratch::grown(scratch.sums, row));
  }
  scratch.trim();
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
