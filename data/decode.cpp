#include "data/decode.h"

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/error.h"

namespace mcdl {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
struct StbFree {
  void operator()(stbi_uc* p) const { stbi_image_free(p); }
};

// PIL's RGB → L conversion (Convert.c L24): ITU-R 601-2 luma in 16-bit fixed point, rounded.
inline uint8_t pil_luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
}

}  // namespace

Image decode_image(const std::string& path, int64_t channels) {
  check(channels == 3 || channels == 1, "decode_image: channels must be 3 or 1, got ", channels, " for '", path, "'");
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) fail("decode_image: cannot open '", path, "': ", std::strerror(errno));
  int width = 0, height = 0, file_channels = 0;
  // Native component count (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA; JPEG CMYK arrives as 3).
  std::unique_ptr<stbi_uc, StbFree> data(stbi_load_from_file(file.get(), &width, &height, &file_channels, 0));
  if (!data) fail("decode_image: cannot decode '", path, "': ", stbi_failure_reason());

  Image image(height, width, channels);
  const int64_t pixels = static_cast<int64_t>(height) * width;
  const stbi_uc* src = data.get();
  const bool grey = file_channels <= 2;
  for (int64_t i = 0; i < pixels; ++i) {
    const stbi_uc* p = src + i * file_channels;
    if (channels == 3) {
      for (int c = 0; c < 3; ++c) image.pixels[static_cast<size_t>(i * 3 + c)] = grey ? p[0] : p[c];
    } else {
      image.pixels[static_cast<size_t>(i)] = grey ? p[0] : pil_luma(p[0], p[1], p[2]);
    }
  }
  return image;
}

void write_png(const std::string& path, const Image& image) {
  check(image.channels == 1 || image.channels == 3, "write_png: '", path, "': images have 1 or 3 channels, got ",
        image.channels);
  check(image.height > 0 && image.width > 0, "write_png: '", path, "': empty image");
  const int ok = stbi_write_png(path.c_str(), static_cast<int>(image.width), static_cast<int>(image.height),
                                static_cast<int>(image.channels), image.pixels.data(),
                                static_cast<int>(image.width * image.channels));
  check(ok != 0, "write_png: cannot write '", path, "'");
}

}  // namespace mcdl
