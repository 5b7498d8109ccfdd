#include "data/decode.h"

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/error.h"
#include "kernels/augment_math.h"  // pixel_math::luma, PIL's RGB → L

namespace mcdl {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
struct StbFree {
  void operator()(stbi_uc* p) const { stbi_image_free(p); }
};

void check_pixels(int64_t width, int64_t height, const std::string& what) {
  check(width * height <= kMaxImagePixels, "decode_image: '", what, "' is ", width, " x ", height,
        " pixels, more than the limit of ", kMaxImagePixels, " (8192 x 8192)");
}

// A file whose pixel data, `present` bytes after its header, is shorter than its header declares.
void check_not_truncated(const char* format, int64_t width, int64_t height, int64_t needed, int64_t present,
                         const std::string& what) {
  check(present >= needed, "decode_image: cannot decode '", what, "': the ", format, " file is truncated: its ", width,
        " x ", height, " pixels need ", needed, " bytes, it holds ", present, " after the header");
}

// Two faults of stb_image's binary PNM reader (P5, P6), refused before stb reads the file:
// - it accumulates a header number's digits in an int without an overflow check (signed
//   overflow, undefined behaviour) for numbers of 10 digits or more; no valid header has one
//   (stb refuses sides above 2^24, 8 digits);
// - it ignores whether the file holds all the pixels its header declares (stbi__getn's result),
//   so a truncated file decodes, the missing pixels left as uninitialised memory.
// The header is walked byte by byte as stb walks it: "P5"/"P6", then width, height and maximum
// value, separated by whitespace and '#' comments; a number ends at the first byte that is not
// a digit, which is consumed, so the pixels start right after the one byte that ends the maximum
// value. Returns without a word where stb would refuse the header itself.
void check_pnm_file(std::span<const uint8_t> bytes, const std::string& what) {
  if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != '5' && bytes[1] != '6')) return;
  size_t at = 2;  // the next byte stb would read
  const auto end = [&] { return at >= bytes.size(); };
  const auto next = [&]() -> uint8_t { return end() ? 0 : bytes[at++]; };  // stbi__get8: 0 past the end
  const auto space = [](uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  uint8_t c = next();
  const auto skip = [&] {
    for (;;) {
      while (!end() && space(c)) c = next();
      if (end() || c != '#') return;
      while (!end() && c != '\n' && c != '\r') c = next();
    }
  };
  const auto number = [&] {
    int64_t value = 0, digits = 0;
    for (; !end() && c >= '0' && c <= '9'; c = next())
      if (++digits <= 8) value = value * 10 + (c - '0');
    check(digits <= 8, "decode_image: cannot decode '", what, "': a PNM header number of ", digits,
          " digits (corrupt file)");
    return value;
  };
  skip();
  const int64_t width = number();
  skip();
  const int64_t height = number();
  skip();
  const int64_t max_value = number();
  if (max_value > 65535) return;
  check_pixels(width, height, what);
  const int64_t needed = width * height * (bytes[1] == '6' ? 3 : 1) * (max_value > 255 ? 2 : 1);
  check_not_truncated("PNM", width, height, needed, static_cast<int64_t>(bytes.size() - std::min(at, bytes.size())),
                      what);
}

// stb_image's TGA reader reads the rows of an uncompressed true-colour or grey image without
// checking that the file holds them (stbi__getn's result), leaving the missing rows as
// uninitialised memory. Refused here for the files stb reads that way: no colour map, image type
// 2 or 3, a whole number of bytes a pixel (8, 24 or 32 bits, or 16 for grey with alpha). TGA has
// no magic number; a file with byte 1 zero fails every other format's (which stb tries first),
// so such a file is read as a TGA. Compressed and colour-mapped data stb reads a byte at a time,
// as 0 past the end.
void check_tga_file(std::span<const uint8_t> bytes, const std::string& what) {
  const auto byte = [&](size_t i) -> int64_t { return i < bytes.size() ? bytes[i] : 0; };  // stb: 0 past the end
  const auto le16 = [&](size_t i) { return byte(i) | byte(i + 1) << 8; };
  const int64_t colour_map = byte(1), type = byte(2), bits = byte(16);
  if (colour_map != 0 || (type != 2 && type != 3)) return;
  const int64_t width = le16(12), height = le16(14);
  const int64_t channels = bits == 8 ? 1 : bits == 24 ? 3 : bits == 32 ? 4 : bits == 16 && type == 3 ? 2 : 0;
  if (width < 1 || height < 1 || channels == 0) return;
  const size_t start = 18 + static_cast<size_t>(byte(0));  // the header, then the image ID field
  check_not_truncated("TGA", width, height, width * height * channels,
                      static_cast<int64_t>(bytes.size() - std::min(start, bytes.size())), what);
}

// stb_image's JPEG reader builds each Huffman table into a 257-entry array before checking
// that the table's 16 code counts add up to at most 256 (a write past the array, found by
// fuzz_decode). Refuses such a DHT segment before stb reads it, walking the markers as stb does:
// segments with a length, entropy-coded data after SOS up to the next marker, DHT tables of a
// class/id byte, 16 counts and that many symbols, read while the segment length is not used up.
void check_jpeg_huffman_tables(std::span<const uint8_t> bytes, const std::string& what) {
  // The start of image: stb, like the JPEG standard, lets fill bytes (0xff) precede a marker's
  // code, this one's too.
  size_t at = 0;
  if (bytes.empty() || bytes[0] != 0xff) return;
  while (at < bytes.size() && bytes[at] == 0xff) ++at;
  if (at >= bytes.size() || bytes[at] != 0xd8) return;
  ++at;
  while (at + 1 < bytes.size()) {
    if (bytes[at] != 0xff) {  // entropy-coded data (after SOS): up to the next real marker
      ++at;
      continue;
    }
    while (at < bytes.size() && bytes[at] == 0xff) ++at;
    if (at >= bytes.size()) return;
    const uint8_t marker = bytes[at++];
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;  // no segment
    if (marker == 0xd9 || at + 2 > bytes.size()) return;                                     // EOI, or truncated
    const size_t length = size_t{bytes[at]} << 8 | bytes[at + 1];
    if (marker == 0xc4) {
      int64_t left = static_cast<int64_t>(length) - 2;
      size_t table = at + 2;
      while (left > 0 && table < bytes.size()) {
        // A table cut off by the end of the data: stb reads the missing counts as 0.
        size_t count = 0;
        for (size_t i = 1; i <= 16 && table + i < bytes.size(); ++i) count += bytes[table + i];
        check(count <= 256, "decode_image: cannot decode '", what, "': a JPEG Huffman table of ", count,
              " codes (at most 256; corrupt file)");
        left -= static_cast<int64_t>(17 + count);
        table += 17 + count;
      }
    }
    at += length;
  }
}

void check_channels(int64_t channels, const std::string& what) {
  check(channels == 3 || channels == 1, "decode_image: channels must be 3 or 1, got ", channels, " for '", what, "'");
}

}  // namespace

Image decode_image(const std::string& path, int64_t channels) {
  check_channels(channels, path);  // before any I/O
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) fail("decode_image: cannot open '", path, "': ", std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  for (size_t got; (got = std::fread(buffer, 1, sizeof buffer, file.get())) > 0;) bytes.insert(bytes.end(), buffer, buffer + got);
  if (std::ferror(file.get())) fail("decode_image: cannot read '", path, "': ", std::strerror(errno));
  return decode_image_bytes(bytes, path, channels);
}

Image decode_image_bytes(std::span<const uint8_t> bytes, const std::string& path, int64_t channels) {
  check_channels(channels, path);
  check(bytes.size() <= static_cast<size_t>(INT32_MAX), "decode_image: '", path, "' is larger than 2 GiB");
  check_pnm_file(bytes, path);
  check_tga_file(bytes, path);
  check_jpeg_huffman_tables(bytes, path);
  const int size = static_cast<int>(bytes.size());
  int width = 0, height = 0, file_channels = 0;
  // The header's size first, so that a bomb is refused before stb allocates for it.
  if (stbi_info_from_memory(bytes.data(), size, &width, &height, &file_channels)) check_pixels(width, height, path);
  // Native component count (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA; JPEG CMYK arrives as 3).
  std::unique_ptr<stbi_uc, StbFree> data(
      stbi_load_from_memory(bytes.data(), size, &width, &height, &file_channels, 0));
  if (!data) fail("decode_image: cannot decode '", path, "': ", stbi_failure_reason());
  check_pixels(width, height, path);
  check(width > 0 && height > 0, "decode_image: cannot decode '", path, "': it is ", width, " x ", height,
        " pixels, an empty image (corrupt file)");

  Image image(height, width, channels);
  const int64_t pixels = static_cast<int64_t>(height) * width;
  const stbi_uc* src = data.get();
  uint8_t* out = image.pixels.data();
  const int64_t step = file_channels;  // the source's bytes per pixel
  if (channels == file_channels) {
    std::memcpy(out, src, image.pixels.size());  // RGB to RGB, grey to grey: as decoded
  } else if (channels == 3 && file_channels == 4) {  // RGBA to RGB
    for (int64_t i = 0; i < pixels; ++i)
      for (int64_t c = 0; c < 3; ++c) out[3 * i + c] = src[i * step + c];
  } else if (channels == 3) {  // grey (and alpha) to RGB
    for (int64_t i = 0; i < pixels; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = src[i * step];
  } else if (file_channels <= 2) {  // grey and alpha to grey
    for (int64_t i = 0; i < pixels; ++i) out[i] = src[i * step];
  } else {  // RGB (and alpha) to L
    for (int64_t i = 0; i < pixels; ++i)
      out[i] = static_cast<uint8_t>(pixel_math::luma(src[i * step], src[i * step + 1], src[i * step + 2]));
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
