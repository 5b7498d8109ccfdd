#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "data/resize.h"
#include "engine/error.h"
#include "kernels/augment_math.h"

namespace mcdl {

Image crop(const Image& image, int64_t top, int64_t left, int64_t height, int64_t width) {
  check(height > 0 && width > 0, "crop: size must be positive, got ", height, "x", width);
  const int64_t c = image.channels;
  Image out(height, width, c);
  // The columns [x0, x1) of the output that lie inside the source.
  const int64_t x0 = std::clamp<int64_t>(-left, 0, width), x1 = std::clamp<int64_t>(image.width - left, 0, width);
  for (int64_t y = 0; y < height; ++y) {
    const int64_t sy = y + top;
    if (sy < 0 || sy >= image.height || x1 <= x0) continue;
    std::memcpy(&out.pixels[static_cast<size_t>((y * width + x0) * c)],
                &image.pixels[static_cast<size_t>((sy * image.width + left + x0) * c)],
                static_cast<size_t>((x1 - x0) * c));
  }
  return out;
}

namespace {
// The source offset of a centred crop along one axis (negative: padding before).
int64_t center_offset(int64_t size, int64_t crop_size) {
  if (crop_size > size) return -((crop_size - size) / 2);
  // int(round(d / 2.0)): Python rounds half to even, as nearbyint in the default mode.
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(size - crop_size) / 2.0));
}
}  // namespace

Image center_crop(const Image& image, int64_t height, int64_t width) {
  return crop(image, center_offset(image.height, height), center_offset(image.width, width), height, width);
}

namespace {
// Pixel x of the source row copied to position width − 1 − x of the destination row.
void mirror_row(const uint8_t* src, uint8_t* dst, int64_t width, int64_t c) {
  if (c == 3) {
    for (int64_t x = 0; x < width; ++x) {
      const uint8_t* p = src + 3 * (width - 1 - x);
      dst[3 * x] = p[0];
      dst[3 * x + 1] = p[1];
      dst[3 * x + 2] = p[2];
    }
  } else {
    for (int64_t x = 0; x < width; ++x)
      for (int64_t k = 0; k < c; ++k) dst[c * x + k] = src[c * (width - 1 - x) + k];
  }
}
}  // namespace

Image hflip(const Image& image) {
  Image out(image.height, image.width, image.channels);
  const int64_t row = image.width * image.channels;
  for (int64_t y = 0; y < image.height; ++y)
    mirror_row(image.pixels.data() + y * row, out.pixels.data() + y * row, image.width, image.channels);
  return out;
}

CropFlip draw_random_crop_flip(RandomStream& stream, int64_t height, int64_t width, int64_t size) {
  check(size > 0 && height >= size && width >= size, "random crop: crop size ", size, " is larger than the ", height,
        "x", width, " image");
  CropFlip p;
  if (height != size || width != size) {
    p.top = stream.randint(0, height - size + 1);
    p.left = stream.randint(0, width - size + 1);
  }
  p.flip = stream.uniform_float() < 0.5f;
  return p;
}

Image apply_crop_flip(const Image& image, const CropFlip& params, int64_t size) {
  const int64_t c = image.channels;
  const bool inside = params.top >= 0 && params.left >= 0 && params.top + size <= image.height &&
                      params.left + size <= image.width;
  if (!params.flip || !inside) {
    Image out = crop(image, params.top, params.left, size, size);
    return params.flip ? hflip(out) : out;
  }
  // The common case in one pass: each cropped row mirrored straight into place.
  Image out(size, size, c);
  for (int64_t y = 0; y < size; ++y)
    mirror_row(image.pixels.data() + ((params.top + y) * image.width + params.left) * c,
               out.pixels.data() + y * size * c, size, c);
  return out;
}

ResizedCrop draw_random_resized_crop(RandomStream& stream, int64_t height, int64_t width, double scale_min,
                                     double scale_max, double ratio_min, double ratio_max) {
  check(height > 0 && width > 0 && scale_min <= scale_max && ratio_min <= ratio_max && ratio_min > 0,
        "random resized crop: bad arguments for a ", height, "x", width, " image");
  const double area = static_cast<double>(height * width);
  const double log_ratio_min = std::log(ratio_min), log_ratio_max = std::log(ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * stream.uniform(scale_min, scale_max);
    const double aspect_ratio = std::exp(stream.uniform(log_ratio_min, log_ratio_max));
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target_area * aspect_ratio)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target_area / aspect_ratio)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int64_t top = stream.randint(0, height - h + 1);
      const int64_t left = stream.randint(0, width - w + 1);
      return {top, left, h, w};
    }
  }
  // Fallback: a central crop.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (in_ratio < ratio_min) {
    h = static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / ratio_min));
  } else if (in_ratio > ratio_max) {
    w = static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * ratio_max));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

Image apply_resized_crop(const Image& image, const ResizedCrop& params, int64_t size) {
  return resize_bicubic(crop(image, params.top, params.left, params.height, params.width), size, size);
}

Normalization Normalization::imagenet() { return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}; }
Normalization Normalization::grayscale() { return {{0.2860f}, {0.3530f}}; }
Normalization Normalization::for_channels(int64_t channels) {
  check(channels == 3 || channels == 1, "Normalization: images have 3 or 1 channels, got ", channels);
  return channels == 3 ? imagenet() : grayscale();
}

void to_tensor_normalize(const Image& image, const Normalization& norm, float* out_chw) {
  const int64_t c = image.channels, plane = image.height * image.width;
  check(static_cast<int64_t>(norm.mean.size()) == c && static_cast<int64_t>(norm.std.size()) == c,
        "to_tensor_normalize: ", c, "-channel image but ", norm.mean.size(), " means and ", norm.std.size(),
        " stds");
  // Per channel, the 256 possible results, each computed exactly as torchvision does (so a table
  // lookup is bit-identical to computing per pixel), with the formula the CUDA kernels use.
  std::vector<float> tables(static_cast<size_t>(256 * c));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int v = 0; v < 256; ++v)
      tables[static_cast<size_t>(ch * 256 + v)] =
          pixel_math::normalize_value(v, norm.mean[static_cast<size_t>(ch)], norm.std[static_cast<size_t>(ch)]);
  const uint8_t* src = image.pixels.data();
  if (c == 3) {  // one pass over the interleaved pixels, three planes out
    const float *t0 = tables.data(), *t1 = t0 + 256, *t2 = t1 + 256;
    float *d0 = out_chw, *d1 = d0 + plane, *d2 = d1 + plane;
    for (int64_t i = 0; i < plane; ++i) {
      d0[i] = t0[src[3 * i]];
      d1[i] = t1[src[3 * i + 1]];
      d2[i] = t2[src[3 * i + 2]];
    }
    return;
  }
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < plane; ++i) out_chw[ch * plane + i] = tables[static_cast<size_t>(ch * 256 + src[i * c + ch])];
}

}  // namespace mcdl
