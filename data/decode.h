// Image files to Image and back, with stb_image / stb_image_write (libstb-dev).
//
// decode_image matches the reference loader `PIL.Image.open(path).convert('RGB')` (or
// .convert('L') for channels = 1) in its colour conversions: grayscale is replicated to RGB, alpha
// is dropped, RGB → L uses PIL's ITU-R 601-2 weights (R·19595 + G·38470 + B·7471 + 0x8000) >> 16.
// CMYK/YCCK JPEGs are converted as stb does (Adobe-inverted CMYK, see docs/backbone-and-data-facts.md §4.1). EXIF
// orientation is ignored, as in the reference pipeline. JPEG pixels differ from libjpeg-turbo's by
// a few levels (stb's IDCT and upsampler), so decoding is not bit-exact against PIL.
#pragma once
#include <cstddef>  // size_t, which data/image.h uses without including
#include <cstdint>
#include <span>
#include <string>

#include "data/image.h"

namespace mcdl {

// Decodes `path` (JPEG, PNG, BMP, GIF, TGA, PSD, PNM, ...) to `channels` = 3 (RGB) or 1 (L).
// A missing, unreadable or corrupt file throws mcdl::Error naming the path and the reason, as
// does an image of more than kMaxImagePixels pixels (checked from the header, before decoding).
Image decode_image(const std::string& path, int64_t channels = 3);
// The same for a file's bytes in memory; `what` names them in messages.
Image decode_image_bytes(std::span<const uint8_t> bytes, const std::string& what, int64_t channels = 3);

// 8192 x 8192: a small hostile file cannot claim an image that needs gigabytes (stb itself
// allows 2^24 x 2^24 with up to 2 GiB per buffer). Far above any dataset's photos.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 26;

// Writes `image` (1 or 3 channels) as a lossless PNG; throws mcdl::Error naming the path on failure.
void write_png(const std::string& path, const Image& image);

}  // namespace mcdl
