// An 8-bit image in memory: height × width × channels, interleaved (HWC), rows top to bottom.
// Channels: 3 (RGB) or 1 (grayscale). Every transform of the data pipeline works on this type,
// as torchvision's transforms work on PIL images before ToTensor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mcdl {

struct Image {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels bytes

  Image() = default;
  Image(int64_t h, int64_t w, int64_t c) : height(h), width(w), channels(c), pixels(static_cast<size_t>(h * w * c)) {}
  bool empty() const { return pixels.empty(); }
  uint8_t& at(int64_t y, int64_t x, int64_t c) { return pixels[static_cast<size_t>((y * width + x) * channels + c)]; }
  uint8_t at(int64_t y, int64_t x, int64_t c) const { return pixels[static_cast<size_t>((y * width + x) * channels + c)]; }
  bool operator==(const Image&) const = default;
};

}  // namespace mcdl
