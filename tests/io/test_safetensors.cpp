#include "io/safetensors.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/ops.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("mcdl_safetensors_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Writes a new file: truncating an existing one makes ext4 flush it to disk on close
// (auto_da_alloc), which costs milliseconds per rewrite.
void write_bytes(const std::string& path, const std::string& bytes) {
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string u64_le(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

// A safetensors file with the given header text and data area.
std::string file_bytes(const std::string& header, const std::string& data = "") {
  return u64_le(header.size()) + header + data;
}

std::string fixture(const std::string& name) {
  // __FILE__ is relative to the repository root, where the build compiles and the tests run.
  return (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "safetensors" / name).string();
}

void check_same_tensor(const Tensor& got, const Tensor& want) {
  CHECK(got.device() == Device::cpu());
  CHECK(got.dtype() == want.dtype());
  CHECK(got.shape() == want.shape());
  Tensor host = want.to(Device::cpu());
  REQUIRE(got.nbytes() == host.nbytes());
  CHECK(std::memcmp(got.raw_data(), host.raw_data(), got.nbytes()) == 0);  // bit-exact, NaN and -0 included
}

}  // namespace

TEST_CASE("safetensors: every dtype round-trips bit-exactly with its shape, and the metadata with it") {
  TempDir dir;
  const float inf = std::numeric_limits<float>::infinity();
  Tensor base = from_vector<float>({9, 9, 9, 4.5f, -5.5f, 9}, {6});
  const std::map<std::string, Tensor> tensors = {
      {"f32", from_vector<float>({1.5f, -2.f, inf, std::nanf(""), -0.f, 1e-45f}, {2, 3})},
      {"f64", from_vector<double>({1.0 / 3.0, -1e300}, {2})},
      {"bf16", from_vector<float>({1.f, -3.5f, 0.15625f}, {3}).to(DType::bf16)},
      {"i32", from_vector<int32_t>({std::numeric_limits<int32_t>::min(), -1, 0, 2147483647}, {2, 2})},
      {"i64 scalar", from_vector<int64_t>({std::numeric_limits<int64_t>::min()}, {})},
      {"u8", from_vector<uint8_t>({0, 255, 7}, {3, 1, 1})},
      {"empty", empty({0, 4}, DType::f32)},
      {"view", view_of(base, {2}, 3)},                         // only the view's window is written
      {"on cuda", full({2, 2}, 2.5, DType::f64, Device::cuda())},  // copied to the host first
  };
  const std::map<std::string, std::string> metadata = {{"format", "mcdl"}, {"note", "h\xc3\xa9llo \"quoted\"\n"}};
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, tensors, metadata);

  SafetensorsFile loaded = load_safetensors(path);
  CHECK(loaded.metadata == metadata);
  REQUIRE(loaded.tensors.size() == tensors.size());
  for (const auto& [name, tensor] : tensors) {
    CAPTURE(name);
    REQUIRE(loaded.tensors.count(name) == 1);
    check_same_tensor(loaded.tensors.at(name), tensor);
  }
  CHECK(loaded.tensors.at("view").to_vector<float>() == std::vector<float>{4.5f, -5.5f});

  // The layout: header padded with spaces to 8 bytes, tensors contiguous in name order.
  const std::string bytes = read_bytes(path);
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  CHECK(header_size % 8 == 0);
  const std::string header_text = bytes.substr(8, header_size);
  CHECK(header_text.rfind("{\"__metadata__\":", 0) == 0);
  CHECK(header_text.find_last_not_of(' ') + 1 > header_size - 8);
  const auto header = nlohmann::json::parse(header_text);
  uint64_t expected_begin = 0;
  for (const auto& [name, tensor] : tensors) {
    const auto offsets = header.at(name).at("data_offsets");
    CHECK(offsets[0].get<uint64_t>() == expected_begin);
    expected_begin = offsets[1].get<uint64_t>();
  }
  CHECK(8 + header_size + expected_begin == bytes.size());
}

TEST_CASE("safetensors: no tensors and no metadata make a valid file without a __metadata__ entry") {
  TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  save_safetensors(path, {});
  CHECK(read_bytes(path) == file_bytes("{}      "));
  SafetensorsFile loaded = load_safetensors(path);
  CHECK(loaded.tensors.empty());
  CHECK(loaded.metadata.empty());
}

TEST_CASE("safetensors: a file laid out as the reference library writes it loads with the right values") {
  // Written by tools/make_safetensors_fixtures.py: tensors ordered by dtype then name, F16 and BOOL.
  SafetensorsFile file = load_safetensors(fixture("numpy_mixed.safetensors"));
  CHECK(file.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"producer", "numpy \xe2\x9c\x93"}});
  CHECK(file.tensors.size() == 9);
  const auto& t = file.tensors;

  CHECK(t.at("weight").dtype() == DType::f32);
  CHECK(t.at("weight").shape() == Shape{2, 3});
  CHECK(t.at("weight").to_vector<float>() == std::vector<float>{0.5f, -1.25f, 3.f, 1e-3f, -0.f, 1234.5f});
  CHECK(t.at("bias").dtype() == DType::f64);
  CHECK(t.at("bias").to_vector<double>() == std::vector<double>{1.0 / 3.0, -2.0, 1e300});
  CHECK(t.at("brain").dtype() == DType::bf16);
  CHECK(t.at("brain").to_vector<float>() == std::vector<float>{1.f, -3.5f, 0.15625f});
  CHECK(t.at("steps").dtype() == DType::i64);
  CHECK(t.at("steps").shape() == Shape{});
  CHECK(t.at("steps").item() == -7);
  CHECK(t.at("ids").to_vector<int32_t>() ==
        std::vector<int32_t>{0, -1, 2147483647, std::numeric_limits<int32_t>::min()});
  CHECK(t.at("pixels").dtype() == DType::u8);
  CHECK(t.at("pixels").to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 128, 255});
  CHECK(t.at("mask").dtype() == DType::u8);  // BOOL reads as u8
  CHECK(t.at("mask").to_vector<uint8_t>() == std::vector<uint8_t>{1, 0, 1});
  CHECK(t.at("nothing").shape() == Shape{0, 3});

  // F16 becomes f32: 1, -2.5, max, min normal, min subnormal, inf, -0, NaN.
  const Tensor& half = t.at("half");
  CHECK(half.dtype() == DType::f32);
  CHECK(half.shape() == Shape{2, 4});
  const std::vector<float> h = half.to_vector<float>();
  CHECK(h[0] == 1.f);
  CHECK(h[1] == -2.5f);
  CHECK(h[2] == 65504.f);
  CHECK(h[3] == std::ldexp(1.f, -14));
  CHECK(h[4] == std::ldexp(1.f, -24));
  CHECK(h[5] == std::numeric_limits<float>::infinity());
  CHECK((h[6] == 0.f && std::signbit(h[6])));
  CHECK(std::isnan(h[7]));
}

TEST_CASE("safetensors: save reproduces the reference library's bytes exactly") {
  // One dtype, so the reference's (dtype, name) order is the name order save writes.
  TempDir dir;
  const std::string reference = fixture("numpy_f32.safetensors");
  SafetensorsFile file = load_safetensors(reference);
  const std::string path = dir.file("resaved.safetensors");
  save_safetensors(path, file.tensors, file.metadata);
  CHECK(read_bytes(path) == read_bytes(reference));
}

TEST_CASE("safetensors: tensors left in the file are validated, then read block by block of rows") {
  TempDir dir;
  const std::string path = dir.file("banks.safetensors");
  const Tensor probs = reshape(arange(5 * 3 * 4, DType::f32), {5, 3, 4});
  const Tensor classes = reshape(arange(10, DType::i32), {5, 2});
  save_safetensors(path, {{"bank.probs", probs}, {"bank.classes", classes}, {"step", scalar_tensor(7.0, DType::i64)}});
  const auto leave = [](const std::string& name) { return name == "bank.probs" || name == "step"; };
  const SafetensorsFile file = load_safetensors(path, leave);
  CHECK(file.tensors.count("bank.classes") == 1);
  CHECK(file.tensors.count("step") == 1);  // a 0-dim tensor has no rows: read whole
  REQUIRE(file.stored.count("bank.probs") == 1);
  CHECK(file.tensors.count("bank.probs") == 0);
  const StoredTensor& stored = file.stored.at("bank.probs");
  CHECK(stored.dtype() == DType::f32);
  CHECK(stored.shape() == Shape{5, 3, 4});
  CHECK(stored.rows(0, 5).to_vector<float>() == probs.to_vector<float>());
  CHECK(stored.rows(2, 4).shape() == Shape{2, 3, 4});
  CHECK(stored.rows(2, 4).to_vector<float>() == slice(probs, 0, 2, 4).clone().to_vector<float>());
  CHECK(stored.rows(5, 5).numel() == 0);
  CHECK_THROWS_WITH(stored.rows(3, 6), doctest::Contains("rows [3, 6) of a tensor of 5"));
  // F16 rows become f32, as a whole F16 tensor does.
  const std::string half_path = dir.file("half.safetensors");
  write_bytes(half_path, file_bytes("{\"h\":{\"dtype\":\"F16\",\"shape\":[3,2],\"data_offsets\":[0,12]}}",
                                    std::string("\x00\x3c\x00\xc0\x00\x38\x00\x00\x00\x7c\x00\x40", 12)));
  const SafetensorsFile half = load_safetensors(half_path, [](const std::string&) { return true; });
  CHECK(half.stored.at("h").rows(1, 3).to_vector<float>() ==
        std::vector<float>{0.5f, 0.f, std::numeric_limits<float>::infinity(), 2.f});
  // The path replaced by another file, then removed: the rows still come from the file validated.
  save_safetensors(path, {{"bank.probs", zeros({5, 3, 4})}, {"bank.classes", classes}});
  CHECK(stored.rows(2, 4).to_vector<float>() == slice(probs, 0, 2, 4).clone().to_vector<float>());
  fs::remove(path);
  CHECK(stored.rows(4, 5).to_vector<float>() == slice(probs, 0, 4, 5).clone().to_vector<float>());
  // A file cut short in place after it was loaded: the read says so, never a crash.
  save_safetensors(path, {{"bank.probs", probs}});
  const SafetensorsFile again = load_safetensors(path, leave);
  fs::resize_file(path, 40);
  CHECK_THROWS_WITH(again.stored.at("bank.probs").rows(4, 5), doctest::Contains("the file changed"));
}

TEST_CASE("safetensors: tensors handed over in pieces are written as the same tensors in memory would be") {
  TempDir dir;
  const Tensor probs = reshape(arange(5 * 3 * 4, DType::f32), {5, 3, 4});
  const Tensor classes = reshape(arange(10, DType::i32), {5, 2});
  const Tensor step = scalar_tensor(7.0, DType::i64);
  const std::map<std::string, std::string> metadata = {{"epoch", "4"}};
  const std::string whole = dir.file("whole.safetensors");
  save_safetensors(whole, {{"a.probs", probs}, {"b.classes", classes}, {"c.step", step}}, metadata);
  // Sent in pieces of any size, named between the tensors in memory.
  const auto in_pieces = [](const Tensor& t, size_t piece, size_t skip = 0) {
    return TensorPieces{t.dtype(), t.shape(), [t, piece, skip](const auto& write) {
                          const auto* bytes = static_cast<const char*>(t.raw_data());
                          for (size_t at = 0; at + skip < t.nbytes(); at += piece)
                            write(bytes + at, std::min(piece, t.nbytes() - skip - at));
                        }};
  };
  const std::string pieces = dir.file("pieces.safetensors");
  save_safetensors(pieces, {{"a.probs", probs}, {"c.step", step}}, metadata, {{"b.classes", in_pieces(classes, 12)}});
  CHECK(read_bytes(pieces) == read_bytes(whole));
  save_safetensors(pieces, {{"b.classes", classes}}, metadata,
                   {{"a.probs", in_pieces(probs, 7)}, {"c.step", in_pieces(step, 100)}});
  CHECK(read_bytes(pieces) == read_bytes(whole));

  // Too few bytes, too many, or a name given twice: refused, and no file is left.
  const std::string bad = dir.file("bad.safetensors");
  CHECK_THROWS_WITH(save_safetensors(bad, {}, {}, {{"a.probs", in_pieces(probs, 16, 4)}}),
                    doctest::Contains("tensor \"a.probs\" was handed 236 of its 240 bytes"));
  const TensorPieces twice{DType::f32, {2}, [](const auto& write) {
                             const float values[3] = {1, 2, 3};
                             write(values, 8);
                             write(values + 2, 4);
                           }};
  CHECK_THROWS_WITH(save_safetensors(bad, {}, {}, {{"t", twice}}),
                    doctest::Contains("tensor \"t\" was handed more than its 8 bytes"));
  CHECK_THROWS_WITH(save_safetensors(bad, {{"b.classes", classes}}, {}, {{"b.classes", in_pieces(classes, 8)}}),
                    doctest::Contains("tensor \"b.classes\" given twice"));
  CHECK_FALSE(fs::exists(bad));
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 2);
}

TEST_CASE("safetensors: every F16 bit pattern converts to the exact f32 value") {
  TempDir dir;
  std::string data;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    data += static_cast<char>(bits & 0xff);
    data += static_cast<char>(bits >> 8);
  }
  const std::string path = dir.file("f16.safetensors");
  write_bytes(path, file_bytes("{\"h\":{\"dtype\":\"F16\",\"shape\":[65536],\"data_offsets\":[0,131072]}}", data));
  const std::vector<float> values = load_safetensors(path).tensors.at("h").to_vector<float>();
  int64_t mismatches = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const int exponent = static_cast<int>((bits >> 10) & 0x1f);
    const float mantissa = static_cast<float>(bits & 0x3ff);
    const float sign = (bits & 0x8000) ? -1.f : 1.f;
    const float got = values[bits];
    bool ok;
    if (exponent == 0x1f) {
      ok = (bits & 0x3ff) ? std::isnan(got) : got == sign * std::numeric_limits<float>::infinity();
    } else {
      const float want = exponent == 0 ? sign * std::ldexp(mantissa, -24)
                                       : sign * std::ldexp(1.f + mantissa / 1024.f, exponent - 15);
      ok = got == want && std::signbit(got) == std::signbit(sign);
    }
    mismatches += ok ? 0 : 1;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("safetensors: malformed files are refused with an error naming the file and the problem") {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  auto refuses = [&](const std::string& bytes, const std::string& problem) {
    write_bytes(path, bytes);
    CAPTURE(problem);
    CHECK_THROWS_WITH(load_safetensors(path), doctest::Contains(problem.c_str()));
  };
  auto refuses_header = [&](const std::string& header, const std::string& data, const std::string& problem) {
    refuses(file_bytes(header, data), problem);
  };
  const std::string f32x1 = "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":";

  SUBCASE("the file cannot be read") {
    const std::string missing = dir.file("missing.safetensors");
    CHECK_THROWS_WITH(load_safetensors(missing),
                      doctest::Contains((missing + ": cannot open the file: No such file or directory").c_str()));
    CHECK_THROWS_WITH(load_safetensors(dir.path.string()), doctest::Contains("not a regular file"));
  }
  SUBCASE("the header length is missing, too large or absurd") {
    refuses(std::string("\x10\0\0\0\0", 5), "the file is 5 bytes, shorter than the 8-byte header length");
    refuses(u64_le(1000) + "{}      ", "header length 1000 is larger than the file (16 bytes)");
    refuses(u64_le(200'000'000) + "{}", "header length 200000000 exceeds the 100000000-byte limit");
    refuses(u64_le(~uint64_t{0}) + "{}", "exceeds the 100000000-byte limit");
  }
  SUBCASE("the header is not a JSON object") {
    CHECK_THROWS_WITH((write_bytes(path, file_bytes("{\"a\":")), load_safetensors(path)),
                      doctest::Contains((path + ": header is not valid JSON").c_str()));
    refuses_header("", "", "header is not valid JSON");
    refuses_header("{} x", "", "header is not valid JSON");
    refuses_header("{\"a\xff\":1}", "", "header is not valid JSON");  // not UTF-8
    refuses_header("[1, 2]", "", "header is not a JSON object but array");
    refuses_header("{\"a\":[[[[1]]]]}", "", "nested deeper than a safetensors header");
  }
  SUBCASE("an entry lacks a field or has the wrong JSON types") {
    refuses_header("{\"a\":5}", "", "tensor \"a\" is a number, not an object");
    refuses_header("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd", "tensor \"a\" has no \"dtype\"");
    refuses_header("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", "abcd", "tensor \"a\" has no \"shape\"");
    refuses_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "abcd", "tensor \"a\" has no \"data_offsets\"");
    refuses_header("{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd",
                   "\"dtype\" must be a string, got 4");
    refuses_header("{\"a\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}", "abcd",
                   "\"shape\" must be an array");
    refuses_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", "abcd",
                   "shape [1.0] must hold integers");
    refuses_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[true],\"data_offsets\":[0,4]}}", "abcd", "must hold integers");
    for (const char* offsets : {"[0]", "[0,4,8]", "[0,\"4\"]", "[-1,4]", "[0,4.0]", "\"0,4\""}) {
      refuses_header("{\"a\":" + f32x1 + offsets + "}}", "abcd",
                     "\"data_offsets\" must be [begin, end] with non-negative integers");
    }
  }
  SUBCASE("an unknown dtype") {
    refuses_header("{\"a\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,1]}}", "a",
                   "tensor \"a\": unknown or unsupported dtype \"Q4\"");
    refuses_header("{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", "a",
                   "unknown or unsupported dtype \"F8_E4M3\"");
  }
  SUBCASE("a negative or overflowing shape") {
    refuses_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[2,-1],\"data_offsets\":[0,0]}}", "",
                   "negative dimension in shape [2,-1]");
    refuses_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", "",
                   "the element count of shape [4294967296,4294967296] overflows");
    refuses_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[18446744073709551615],\"data_offsets\":[0,0]}}", "",
                   "the element count of shape [18446744073709551615] overflows");
    refuses_header("{\"a\":{\"dtype\":\"I64\",\"shape\":[2305843009213693952],\"data_offsets\":[0,0]}}", "",
                   "the byte size of shape [2305843009213693952] overflows");
  }
  SUBCASE("data_offsets out of order, past the data area, or of the wrong size") {
    refuses_header("{\"a\":" + f32x1 + "[8,4]}}", "abcdefgh", "data_offsets [8,4] end before they begin");
    refuses_header("{\"a\":" + f32x1 + "[0,4]}}", "ab", "data_offsets [0,4] extend past the data area (2 bytes)");
    refuses_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "abcdefgh",
                   "data_offsets [0,8] span 8 bytes but F32[3] needs 12");
    refuses_header("{\"a\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,12]}}", "abcdefghijkl",
                   "span 12 bytes but F16[3] needs 6");  // the file's element size, not f32's
  }
  SUBCASE("tensors that overlap or do not tile the data area exactly") {
    refuses_header("{\"a\":" + f32x1 + "[0,4]},\"b\":" + f32x1 + "[2,6]}}", "abcdef",
                   "tensors \"a\" and \"b\" overlap (bytes 2..4)");
    refuses_header("{\"a\":" + f32x1 + "[0,4]},\"b\":" + f32x1 + "[8,12]}}", "abcdefghijkl",
                   "a gap of 4 bytes before tensor \"b\"");
    refuses_header("{\"a\":" + f32x1 + "[4,8]}}", "abcdefgh", "a gap of 4 bytes before tensor \"a\"");
    refuses_header("{\"a\":" + f32x1 + "[0,4]}}", "abcdefg", "3 trailing bytes after the last tensor");
    refuses_header("{}", "x", "1 trailing bytes after the last tensor");
  }
  SUBCASE("metadata that is not a map of strings") {
    refuses_header("{\"__metadata__\":{\"k\":1}}", "", "\"__metadata__\" value for \"k\" is a number, not a string");
    refuses_header("{\"__metadata__\":{\"k\":null}}", "", "value for \"k\" is a null, not a string");
    refuses_header("{\"__metadata__\":\"k\"}", "", "\"__metadata__\" must be an object of strings, got string");
  }
  SUBCASE("duplicate names") {
    refuses_header("{\"a\":" + f32x1 + "[0,4]},\"a\":" + f32x1 + "[4,8]}}", "abcdefgh",
                   "duplicate tensor name \"a\"");
    refuses_header("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd",
                   "duplicate key \"dtype\"");
  }
}

TEST_CASE("safetensors: empty tensors may share an offset with their neighbours") {
  TempDir dir;
  const std::string path = dir.file("empties.safetensors");
  write_bytes(path, file_bytes("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
                               "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                               "\"c\":{\"dtype\":\"I64\",\"shape\":[3,0],\"data_offsets\":[2,2]}}  ",
                               "\x05\x06"));
  SafetensorsFile file = load_safetensors(path);
  CHECK(file.tensors.at("a").numel() == 0);
  CHECK(file.tensors.at("b").to_vector<uint8_t>() == std::vector<uint8_t>{5, 6});
  CHECK(file.tensors.at("c").shape() == Shape{3, 0});
}

TEST_CASE("safetensors: save goes through <path>.tmp and a rename, leaving no partial file") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  const std::string tmp = path + ".tmp";
  write_bytes(tmp, "stale leftovers of a crashed save");

  save_safetensors(path, {{"w", from_vector<float>({1, 2}, {2})}});
  CHECK_FALSE(fs::exists(tmp));
  save_safetensors(path, {{"v", from_vector<int64_t>({7}, {1})}}, {{"step", "2"}});  // replaces the old file
  CHECK_FALSE(fs::exists(tmp));
  SafetensorsFile file = load_safetensors(path);
  CHECK(file.tensors.size() == 1);
  CHECK(file.tensors.at("v").to_vector<int64_t>() == std::vector<int64_t>{7});
  CHECK(file.metadata.at("step") == "2");
  const std::string saved = read_bytes(path);

  SUBCASE("a refused save leaves the old file as it was") {
    CHECK_THROWS_WITH(save_safetensors(path, {{"u", Tensor()}}),
                      doctest::Contains(("save_safetensors: " + path + ": tensor \"u\" is undefined").c_str()));
    CHECK_THROWS_WITH(save_safetensors(path, {{"__metadata__", zeros({1})}}),
                      doctest::Contains("\"__metadata__\" is reserved"));
    CHECK_THROWS_WITH(save_safetensors(path, {{"bad\xff", zeros({1})}}), doctest::Contains("not valid UTF-8"));
    CHECK(read_bytes(path) == saved);
    CHECK_FALSE(fs::exists(tmp));
  }
  SUBCASE("a failed write or rename removes the temporary file") {
    CHECK_THROWS_WITH(save_safetensors(dir.file("no/such/dir/x.safetensors"), {}), doctest::Contains("cannot create"));
    const std::string occupied = dir.file("a_directory");
    fs::create_directory(occupied);
    CHECK_THROWS_WITH(save_safetensors(occupied, {{"w", zeros({1})}}), doctest::Contains("renaming"));
    CHECK(fs::is_directory(occupied));
    CHECK_FALSE(fs::exists(occupied + ".tmp"));
  }
}

TEST_CASE("safetensors: truncated or corrupted files load or throw mcdl::Error, never crash") {
  TempDir dir;
  const std::string path = dir.file("corrupt.safetensors");
  const std::string good = read_bytes(fixture("numpy_mixed.safetensors"));
  for (size_t length = 0; length < good.size(); ++length) {
    write_bytes(path, good.substr(0, length));
    CAPTURE(length);
    CHECK_THROWS_AS(load_safetensors(path), Error);
  }
  int refused = 0;
  for (size_t position = 0; position < good.size(); ++position) {
    for (char replacement : {'\xff', '\0', '9', '"', '['}) {
      std::string bytes = good;
      bytes[position] = replacement;
      write_bytes(path, bytes);
      try {
        load_safetensors(path);  // a corrupted data byte still loads
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  CHECK(refused > 1000);
}
