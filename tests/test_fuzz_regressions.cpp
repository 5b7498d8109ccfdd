// The fuzzing inputs in the normal test suite (no clang needed): every seed of
// tests/fuzz/corpus/<target>/ and every input a fuzzer once crashed on,
// tests/fuzz/regressions/<target>/, through the same target functions as `make fuzz`
// (tests/fuzz/targets.h), which accept only success or mcdl::Error. Plus the limits those
// findings added, each checked with its message.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "data/datasets/common.h"
#include "data/decode.h"
#include "data/mat_file.h"
#include "io/npy.h"
#include "tests/fuzz/targets.h"

namespace fs = std::filesystem;

namespace {

using Target = int (*)(const uint8_t*, size_t);

const std::pair<const char*, Target> kTargets[] = {
    {"cifar", mcdl::fuzz::cifar},
    {"csv", mcdl::fuzz::csv},
    {"decode", mcdl::fuzz::decode},
    {"fashion_mnist", mcdl::fuzz::fashion_mnist},
    {"mat", mcdl::fuzz::mat},
    {"npy", mcdl::fuzz::npy},
    {"pickle", mcdl::fuzz::pickle},
    {"safetensors", mcdl::fuzz::safetensors},
    {"torch_checkpoint", mcdl::fuzz::torch_checkpoint},
    {"zip", mcdl::fuzz::zip},
};

std::vector<uint8_t> file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Feeds every file under tests/fuzz/<kind>/<target>/ to its target; returns how many.
int replay(const std::string& kind) {
  int count = 0;
  for (const auto& [name, target] : kTargets) {
    const fs::path dir = fs::path("tests/fuzz") / kind / name;
    if (!fs::is_directory(dir)) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      INFO(entry.path().string());
      const std::vector<uint8_t> bytes = file_bytes(entry.path());
      CHECK_NOTHROW(target(bytes.data(), bytes.size()));
      ++count;
    }
  }
  return count;
}

}  // namespace

TEST_CASE("fuzz: every seed input is parsed or cleanly rejected") { CHECK(replay("corpus") >= 40); }

TEST_CASE("fuzz: every input a fuzzer crashed on is now cleanly rejected") { CHECK(replay("regressions") >= 1); }

TEST_CASE("read_npy: a header's shape is checked against the file before anything is allocated") {
  // Found by fuzz_npy: a 4 TiB shape was allocated first, then compared with the data.
  CHECK_THROWS_WITH_AS(mcdl::read_npy("tests/fuzz/regressions/npy/huge_shape_allocated_before_size_check"),
                       doctest::Contains("needs 4398046511104 data bytes, the file has 0"), mcdl::Error);
  CHECK_THROWS_WITH_AS(mcdl::read_npy("tests/fuzz/regressions/npy/shape_size_overflows"),
                       doctest::Contains("overflows"), mcdl::Error);
}

TEST_CASE("decode_image: a PNM header number stb would overflow on, and the pixel limit") {
  const std::string overflow = "P5\n27777777777 1\n255\n";
  CHECK_THROWS_WITH_AS(
      mcdl::decode_image_bytes({reinterpret_cast<const uint8_t*>(overflow.data()), overflow.size()}, "x.pgm"),
      doctest::Contains("a PNM header number of 11 digits"), mcdl::Error);
  // 9000 x 9000 > 8192 x 8192: refused from the header, before stb allocates 81 MB for it.
  const std::string big = "P5\n9000 9000\n255\n";
  CHECK_THROWS_WITH_AS(mcdl::decode_image_bytes({reinterpret_cast<const uint8_t*>(big.data()), big.size()}, "x.pgm"),
                       doctest::Contains("'x.pgm' is 9000 x 9000 pixels, more than the limit of 67108864"),
                       mcdl::Error);
  const std::string small = "P5\n2 1\n255\n\x10\x20";
  const mcdl::Image image =
      mcdl::decode_image_bytes({reinterpret_cast<const uint8_t*>(small.data()), small.size()}, "x.pgm", 1);
  CHECK(image.pixels == std::vector<uint8_t>{0x10, 0x20});
}

TEST_CASE("decode_image: a binary PNM file shorter than its header declares is refused, not half decoded") {
  // stb_image reads a PNM's pixels without checking that the file holds them: the missing ones
  // were left as uninitialised memory, silently.
  const auto decode = [](const std::string& bytes) {
    return mcdl::decode_image_bytes({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "x.pnm", 1);
  };
  CHECK_THROWS_WITH_AS(decode("P5\n4 4\n255\n01234567"),
                       doctest::Contains("'x.pnm': the PNM file is truncated: its 4 x 4 pixels need 16 bytes, it "
                                         "holds 8 after the header"),
                       mcdl::Error);
  // Exactly enough bytes decode, one fewer does not: P6 (3 bytes a pixel), 16-bit samples (2 each).
  const std::string rgb16 = "P6 2 1 65535\n" + std::string(12, '\x7f');
  CHECK(decode(rgb16).pixels.size() == 2);
  CHECK_THROWS_WITH_AS(decode(rgb16.substr(0, rgb16.size() - 1)),
                       doctest::Contains("its 2 x 1 pixels need 12 bytes, it holds 11"), mcdl::Error);
  // Comments and any whitespace between the numbers, as stb reads them; one byte ends the header.
  CHECK(decode("P5 #note\n2 # width\n 1 255 \x10\x20").pixels == std::vector<uint8_t>{0x10, 0x20});
  CHECK_THROWS_WITH_AS(decode("P5 2 1 255 \x10"), doctest::Contains("need 2 bytes, it holds 1"), mcdl::Error);
  // An image of no pixels is refused too.
  CHECK_THROWS_WITH_AS(decode("P5\n0 4\n255\n"), doctest::Contains("0 x 4 pixels, an empty image"), mcdl::Error);
  // The fuzz regression input (its first byte is fuzz_decode's channel byte).
  const std::vector<uint8_t> cut = file_bytes("tests/fuzz/regressions/decode/pnm_data_truncated");
  CHECK_THROWS_WITH_AS(mcdl::decode_image_bytes({cut.data() + 1, cut.size() - 1}, "x.pgm"),
                       doctest::Contains("the PNM file is truncated"), mcdl::Error);
}

TEST_CASE("decode_image: an uncompressed TGA shorter than its header declares is refused; Radiance HDR is not read") {
  const auto decode = [](const std::string& bytes) {
    return mcdl::decode_image_bytes({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "x.tga");
  };
  // An 18-byte header: no ID field, no colour map, image type 2 (true colour), 2 x 2 pixels of 24
  // bits, rows from the top.
  const std::string header("\0\0\x02\0\0\0\0\0\0\0\0\0\x02\0\x02\0\x18\x20", 18);
  const mcdl::Image whole = decode(header + std::string(12, '\x40'));
  CHECK(whole.pixels == std::vector<uint8_t>(12, 0x40));
  CHECK_THROWS_WITH_AS(decode(header + std::string(7, '\x40')),
                       doctest::Contains("'x.tga': the TGA file is truncated: its 2 x 2 pixels need 12 bytes, it "
                                         "holds 7 after the header"),
                       mcdl::Error);
  // An image ID field of 3 bytes comes before the pixels.
  std::string with_id = header;
  with_id[0] = 3;
  CHECK(decode(with_id + "abc" + std::string(12, '\x40')).pixels == std::vector<uint8_t>(12, 0x40));
  CHECK_THROWS_WITH_AS(decode(with_id + "abc" + std::string(11, '\x40')), doctest::Contains("holds 11"), mcdl::Error);
  // stb would read a Radiance HDR into an unchecked buffer; it is not a format the engine reads.
  CHECK_THROWS_WITH_AS(decode("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 1\n\x80\x80\x80\x81"),
                       doctest::Contains("cannot decode 'x.tga'"), mcdl::Error);
}

TEST_CASE("decode_image: a JPEG Huffman table of more than 256 codes is refused before stb builds it") {
  // Inputs of fuzz_decode start with its channel byte.
  const std::vector<uint8_t> bad = file_bytes("tests/fuzz/regressions/decode/jpeg_huffman_counts_over_256");
  CHECK_THROWS_WITH_AS(mcdl::decode_image_bytes({bad.data() + 1, bad.size() - 1}, "x.jpg"),
                       doctest::Contains("a JPEG Huffman table of 507 codes (at most 256"), mcdl::Error);
  // The same with the table cut off by the end of the file: stb reads the missing counts as 0.
  const std::vector<uint8_t> cut = file_bytes("tests/fuzz/regressions/decode/jpeg_huffman_table_cut_by_end");
  CHECK_THROWS_WITH_AS(mcdl::decode_image_bytes({cut.data() + 1, cut.size() - 1}, "x.jpg"),
                       doctest::Contains("a JPEG Huffman table of 519 codes (at most 256"), mcdl::Error);
  // The same after 0xff fill bytes before the start-of-image marker, which stb skips (found by
  // fuzz_decode: the check looked for the marker at byte 0 only).
  const std::vector<uint8_t> filled = file_bytes("tests/fuzz/regressions/decode/jpeg_huffman_after_fill_bytes");
  CHECK_THROWS_WITH_AS(mcdl::decode_image_bytes({filled.data() + 1, filled.size() - 1}, "x.jpg"),
                       doctest::Contains("a JPEG Huffman table of 541 codes (at most 256"), mcdl::Error);
  const std::vector<uint8_t> good = file_bytes("tests/fuzz/corpus/decode/python.jpg");
  const mcdl::Image image = mcdl::decode_image_bytes({good.data() + 1, good.size() - 1}, "python.jpg");
  CHECK(image.width > 0);
  CHECK(image.height > 0);
}

TEST_CASE("read_maybe_gzipped: decompressed data beyond the limit is an error") {
  const fs::path path = fs::temp_directory_path() / ("mcdl-gzip-limit-" + std::to_string(::getpid()) + ".gz");
  {
    gzFile out = gzopen(path.c_str(), "wb9");
    REQUIRE(out != nullptr);
    const std::vector<char> zeros(1 << 20, 0);
    for (int i = 0; i < 3; ++i) REQUIRE(gzwrite(out, zeros.data(), static_cast<unsigned>(zeros.size())) > 0);
    REQUIRE(gzclose(out) == Z_OK);
  }
  CHECK(mcdl::dataset_io::read_maybe_gzipped(path.string(), 3 << 20).size() == size_t{3} << 20);
  CHECK_THROWS_WITH_AS(mcdl::dataset_io::read_maybe_gzipped(path.string(), (3 << 20) - 1),
                       doctest::Contains("decompresses to more than 3145727 bytes, the limit"), mcdl::Error);
  CHECK_THROWS_WITH_AS(mcdl::dataset_io::read_maybe_gzipped(path.string(), 1000), doctest::Contains("the limit"),
                       mcdl::Error);
  fs::remove(path);
}

TEST_CASE("read_mat_file: a compressed variable decompressing beyond 256 MiB is an error") {
  // A miCOMPRESSED element whose stream inflates to a 260 MiB miMATRIX of zeros
  // (about 270 KB of deflate data; the reader stops within one output step past the limit).
  const uint32_t inner_size = (uint32_t{1} << 28) + (uint32_t{1} << 22);
  std::vector<uint8_t> packed;
  z_stream z{};
  REQUIRE(deflateInit(&z, 1) == Z_OK);
  const uint32_t tag[2] = {14, inner_size};
  std::vector<uint8_t> chunk(1 << 20, 0), out(1 << 20);
  uint64_t left = inner_size;
  bool first = true;
  while (true) {
    const bool last = left == 0;
    if (first) {
      z.next_in = reinterpret_cast<Bytef*>(const_cast<uint32_t*>(tag));
      z.avail_in = sizeof tag;
      first = false;
    } else if (!last) {
      const size_t n = std::min<uint64_t>(left, chunk.size());
      z.next_in = chunk.data();
      z.avail_in = static_cast<uInt>(n);
      left -= n;
    }
    int status;
    do {
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      status = deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      packed.insert(packed.end(), out.data(), out.data() + (out.size() - z.avail_out));
    } while (z.avail_out == 0 || (last && status != Z_STREAM_END));
    if (last) break;
  }
  deflateEnd(&z);

  std::string file(124, ' ');
  file += std::string("\x00\x01IM", 4);
  const uint32_t compressed_tag[2] = {15, static_cast<uint32_t>(packed.size())};
  file.append(reinterpret_cast<const char*>(compressed_tag), sizeof compressed_tag);
  file.append(reinterpret_cast<const char*>(packed.data()), packed.size());
  const fs::path path = fs::temp_directory_path() / ("mcdl-mat-limit-" + std::to_string(::getpid()) + ".mat");
  std::ofstream(path, std::ios::binary) << file;
  CHECK_THROWS_WITH_AS(mcdl::read_mat_file(path.string()), doctest::Contains("decompresses to more than 268435456 bytes"),
                       mcdl::Error);
  fs::remove(path);
}
