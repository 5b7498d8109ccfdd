#include "data/mat_file.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "engine/error.h"

namespace mcdl {
namespace {

// Data types of level-5 data elements and array classes (MATLAB "MAT-File Format", 2019).
enum MiType : uint32_t {
  miINT8 = 1, miUINT8 = 2, miINT16 = 3, miUINT16 = 4, miINT32 = 5, miUINT32 = 6, miSINGLE = 7,
  miDOUBLE = 9, miINT64 = 12, miUINT64 = 13, miMATRIX = 14, miCOMPRESSED = 15, miUTF8 = 16,
  miUTF16 = 17, miUTF32 = 18,
};
enum MxClass : uint32_t { mxCELL = 1, mxSTRUCT = 2, mxCHAR = 4, mxDOUBLE = 6, mxUINT64 = 15 };

constexpr size_t kHeaderBytes = 128;
constexpr int kMaxDepth = 64;                                // nesting of cells / structs
// Per compressed variable: dataset annotations are a few MB; a small hostile file must not make
// the reader allocate gigabytes.
constexpr uint64_t kMaxDecompressedBytes = uint64_t{1} << 28;

struct Element {
  uint32_t type = 0;
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t offset = 0;  // of the tag, within the parser's buffer
};

// Walks the data elements of one buffer (the file, a decompressed variable, or the contents of
// a miMATRIX), bounds-checked; `where` says which buffer for error messages. Elements inside a
// matrix are padded to 8 bytes; top-level ones are not (a compressed element has no padding,
// so the next one may start anywhere; scipy reads them the same way).
class Parser {
 public:
  Parser(const std::string& where, const uint8_t* data, size_t size, size_t base, bool padded)
      : where_(where), data_(data), size_(size), base_(base), padded_(padded) {}

  bool at_end() const { return pos_ >= size_; }

  Element next() {
    Element e;
    e.offset = pos_;
    need(8, "a data element tag");
    const uint32_t first = u32(pos_);
    if ((first >> 16) != 0) {  // small data element: size and type share the first word
      e.type = first & 0xffff;
      e.size = first >> 16;
      if (e.size > 4) fail_at(pos_, "small data element of ", e.size, " bytes (at most 4)");
      e.data = data_ + pos_ + 4;
      pos_ += 8;
      return e;
    }
    e.type = first;
    e.size = u32(pos_ + 4);
    pos_ += 8;
    if (e.size > size_ - pos_) fail_at(e.offset, "data element of ", e.size, " bytes runs past the end (", size_ - pos_, " left)");
    e.data = data_ + pos_;
    pos_ += e.size;
    if (padded_) pos_ = std::min(size_, (pos_ + 7) & ~size_t{7});
    return e;
  }

  Element next_of(uint32_t type, const char* what) {
    Element e = next();
    if (e.type != type) fail_at(e.offset, what, ": data type ", e.type, ", expected ", type);
    return e;
  }

  Parser inside(const Element& e) const { return Parser(where_, e.data, e.size, base_ + e.offset + 8, true); }

  template <class... Parts>
  [[noreturn]] void fail_at(size_t offset, const Parts&... parts) const {
    fail("mat file ", where_, ", byte ", base_ + offset, ": ", parts...);
  }

 private:
  void need(size_t bytes, const char* what) const {
    if (bytes > size_ - pos_) fail_at(pos_, "truncated: ", what, " needs ", bytes, " bytes, ", size_ - pos_, " left");
  }
  uint32_t u32(size_t at) const {
    uint32_t v;
    std::memcpy(&v, data_ + at, 4);
    return v;
  }

  std::string where_;
  const uint8_t* data_;
  size_t size_;
  size_t base_;
  bool padded_;
  size_t pos_ = 0;
};

template <class T>
void append_as_double(const Element& e, std::vector<double>& out) {
  for (size_t at = 0; at + sizeof(T) <= e.size; at += sizeof(T)) {
    T v;
    std::memcpy(&v, e.data + at, sizeof(T));
    out.push_back(static_cast<double>(v));
  }
}

size_t type_width(uint32_t type) {
  switch (type) {
    case miINT8: case miUINT8: case miUTF8: return 1;
    case miINT16: case miUINT16: case miUTF16: return 2;
    case miINT32: case miUINT32: case miSINGLE: case miUTF32: return 4;
    case miDOUBLE: case miINT64: case miUINT64: return 8;
    default: return 0;
  }
}

std::vector<double> numbers_of(const Parser& p, const Element& e, const char* what) {
  const size_t width = type_width(e.type);
  if (width == 0 || e.type == miUTF8 || e.type == miUTF16 || e.type == miUTF32)
    p.fail_at(e.offset, what, ": data type ", e.type, " is not numeric");
  if (e.size % width != 0) p.fail_at(e.offset, what, ": ", e.size, " bytes is not a whole number of ", width, "-byte values");
  std::vector<double> out;
  out.reserve(e.size / width);
  switch (e.type) {
    case miINT8: append_as_double<int8_t>(e, out); break;
    case miUINT8: append_as_double<uint8_t>(e, out); break;
    case miINT16: append_as_double<int16_t>(e, out); break;
    case miUINT16: append_as_double<uint16_t>(e, out); break;
    case miINT32: append_as_double<int32_t>(e, out); break;
    case miUINT32: append_as_double<uint32_t>(e, out); break;
    case miSINGLE: append_as_double<float>(e, out); break;
    case miDOUBLE: append_as_double<double>(e, out); break;
    case miINT64: append_as_double<int64_t>(e, out); break;
    default: append_as_double<uint64_t>(e, out); break;
  }
  return out;
}

void append_utf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xc0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else {
    out += static_cast<char>(0xe0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  }
}

std::string text_of(const Parser& p, const Element& e) {
  if (e.type == miUTF8) return std::string(reinterpret_cast<const char*>(e.data), e.size);
  if (e.type != miUINT16 && e.type != miUTF16 && e.type != miUINT8 && e.type != miINT8)
    p.fail_at(e.offset, "char array: data type ", e.type, " is not a character type");
  std::string out;
  // 16-bit code units (BMP characters, as MATLAB writes them) or 8-bit characters.
  for (double unit : numbers_of(p, e, "char array")) {
    if (unit < 0 || unit > 0xffff) p.fail_at(e.offset, "char array: character code ", unit, " outside 0..65535");
    append_utf8(static_cast<uint32_t>(unit), out);
  }
  return out;
}

MatArray parse_matrix(Parser& outer, const Element& matrix, int depth);

MatArray parse_matrix_contents(Parser& p, size_t offset, int depth) {
  MatArray a;
  if (depth > kMaxDepth) p.fail_at(offset, "arrays nested more than ", kMaxDepth, " deep");
  if (p.at_end()) {  // an empty miMATRIX: an empty array (e.g. an unset cell)
    a.dims = {0, 0};
    return a;
  }
  const Element flags = p.next_of(miUINT32, "array flags");
  if (flags.size != 8) p.fail_at(flags.offset, "array flags of ", flags.size, " bytes, expected 8");
  const uint32_t mx_class = flags.data[0];
  const Element dims = p.next_of(miINT32, "array dimensions");
  int64_t numel = 1;
  for (double d : numbers_of(p, dims, "array dimensions")) {
    if (d < 0 || d > double{1 << 30}) p.fail_at(dims.offset, "array dimension ", d, " out of range");
    a.dims.push_back(static_cast<int64_t>(d));
    numel *= a.dims.back();
    if (numel > (int64_t{1} << 32)) p.fail_at(dims.offset, "array of more than 2^32 elements");
  }
  if (a.dims.size() < 2) p.fail_at(dims.offset, "array with ", a.dims.size(), " dimensions (at least 2)");
  const Element name = p.next_of(miINT8, "array name");
  a.name.assign(reinterpret_cast<const char*>(name.data), name.size);

  if (mx_class == mxCHAR) {
    a.kind = MatArray::Kind::text;
    if (!p.at_end()) a.text = text_of(p, p.next());
  } else if (mx_class >= mxDOUBLE && mx_class <= mxUINT64) {
    a.kind = MatArray::Kind::numeric;
    if (numel > 0) {
      const Element real = p.next();
      a.numbers = numbers_of(p, real, "numeric array");
      if (static_cast<int64_t>(a.numbers.size()) != numel)
        p.fail_at(real.offset, "numeric array of ", a.numbers.size(), " values, dimensions say ", numel);
    }
  } else if (mx_class == mxCELL) {
    a.kind = MatArray::Kind::cell;
    for (int64_t i = 0; i < numel; ++i) a.elements.push_back(parse_matrix(p, p.next_of(miMATRIX, "cell"), depth + 1));
  } else if (mx_class == mxSTRUCT) {
    a.kind = MatArray::Kind::structure;
    const Element length_element = p.next_of(miINT32, "struct field name length");
    const std::vector<double> length = numbers_of(p, length_element, "struct field name length");
    if (length.size() != 1 || length[0] < 1 || length[0] > 4096)
      p.fail_at(length_element.offset, "bad struct field name length");
    const auto field_length = static_cast<size_t>(length[0]);
    const Element names = p.next_of(miINT8, "struct field names");
    if (names.size % field_length != 0)
      p.fail_at(names.offset, "struct field names of ", names.size, " bytes, not a multiple of ", field_length);
    for (size_t at = 0; at < names.size; at += field_length) {
      const char* start = reinterpret_cast<const char*>(names.data + at);
      a.field_names.emplace_back(start, strnlen(start, field_length));
    }
    for (int64_t i = 0; i < numel * static_cast<int64_t>(a.field_names.size()); ++i)
      a.elements.push_back(parse_matrix(p, p.next_of(miMATRIX, "struct field"), depth + 1));
  } else {
    p.fail_at(flags.offset, "array class ", mx_class, " (sparse, object or function handle) is not supported");
  }
  return a;
}

MatArray parse_matrix(Parser& outer, const Element& matrix, int depth) {
  Parser p = outer.inside(matrix);
  return parse_matrix_contents(p, matrix.offset, depth);
}

std::vector<uint8_t> inflate_element(const Parser& p, const Element& e) {
  std::vector<uint8_t> out;
  z_stream z{};
  if (inflateInit(&z) != Z_OK) p.fail_at(e.offset, "zlib initialisation failed");
  z.next_in = const_cast<Bytef*>(e.data);
  z.avail_in = static_cast<uInt>(e.size);
  int status = Z_OK;
  while (status == Z_OK) {
    if (out.size() >= kMaxDecompressedBytes) break;
    const size_t have = out.size();
    // At most 2 GiB at a time, so that the chunk fits zlib's 32-bit avail_out (an element's
    // size times 4 need not).
    const size_t chunk = std::min<size_t>(std::max<size_t>(1 << 16, e.size * 4), kMaxDecompressedBytes);
    out.resize(have + chunk);
    z.next_out = out.data() + have;
    z.avail_out = static_cast<uInt>(chunk);
    status = inflate(&z, Z_NO_FLUSH);
    // Drops the unwritten tail (erase: the vector only shrinks here).
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(have + chunk - std::min<size_t>(z.avail_out, chunk)), out.end());
    if (status == Z_BUF_ERROR && z.avail_in == 0) break;  // input ended before the stream did
  }
  inflateEnd(&z);
  if (status == Z_OK && out.size() >= kMaxDecompressedBytes)
    p.fail_at(e.offset, "compressed element of ", e.size, " bytes decompresses to more than ", kMaxDecompressedBytes,
              " bytes, the limit");
  if (status != Z_STREAM_END)
    p.fail_at(e.offset, "compressed element of ", e.size, " bytes is corrupt or truncated (zlib status ", status, ")");
  return out;
}

}  // namespace

int64_t MatArray::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const MatArray& MatArray::cell(int64_t index) const {
  check(kind == Kind::cell, "mat array ", name, ": not a cell array");
  check(index >= 0 && index < static_cast<int64_t>(elements.size()), "mat array ", name, ": cell ", index,
        " outside [0, ", elements.size(), ")");
  return elements[static_cast<size_t>(index)];
}

const MatArray& MatArray::field(int64_t index, const std::string& field_name) const {
  check(kind == Kind::structure, "mat array ", name, ": not a struct array");
  check(index >= 0 && index < numel(), "mat array ", name, ": element ", index, " outside [0, ", numel(), ")");
  for (size_t f = 0; f < field_names.size(); ++f)
    if (field_names[f] == field_name) return elements[static_cast<size_t>(index) * field_names.size() + f];
  std::ostringstream names;
  for (const std::string& n : field_names) names << ' ' << n;
  fail("mat array ", name, ": no field '", field_name, "' (fields:", names.str(), ")");
}

double MatArray::scalar() const {
  check(kind == Kind::numeric && numbers.size() == 1, "mat array ", name, ": expected one number, got ",
        numbers.size(), kind == Kind::numeric ? " numbers" : " (not numeric)");
  return numbers[0];
}

std::vector<MatArray> read_mat_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "mat file ", path, ": cannot open");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(bytes.size() >= kHeaderBytes, "mat file ", path, ": ", bytes.size(), " bytes, shorter than the 128-byte header");
  check(!(bytes[126] == 'M' && bytes[127] == 'I'), "mat file ", path, ": big-endian files are not supported");
  check(bytes[126] == 'I' && bytes[127] == 'M', "mat file ", path,
        ": not a MATLAB level-5 file (no 'IM' endian mark at byte 126)");
  const unsigned version = bytes[124] | (bytes[125] << 8);
  check(version == 0x0100, "mat file ", path, ": version 0x", std::hex, version,
        " is not level 5 (v7.3 files are HDF5: re-save with -v7)");

  Parser file(path, bytes.data() + kHeaderBytes, bytes.size() - kHeaderBytes, kHeaderBytes, false);
  std::vector<MatArray> variables;
  while (!file.at_end()) {
    const Element e = file.next();
    if (e.type == miCOMPRESSED) {
      const std::vector<uint8_t> inflated = inflate_element(file, e);
      std::ostringstream where;
      where << path << " (decompressed variable at byte " << kHeaderBytes + e.offset << ")";
      Parser inner(where.str(), inflated.data(), inflated.size(), 0, false);
      variables.push_back(parse_matrix(inner, inner.next_of(miMATRIX, "variable"), 0));
    } else if (e.type == miMATRIX) {
      variables.push_back(parse_matrix(file, e, 0));
    } else {
      file.fail_at(e.offset, "top-level data type ", e.type, " (expected a matrix or compressed element)");
    }
  }
  return variables;
}

MatArray read_mat_variable(const std::string& path, const std::string& name) {
  std::vector<MatArray> variables = read_mat_file(path);
  std::ostringstream names;
  for (MatArray& v : variables) {
    if (v.name == name) return std::move(v);
    names << ' ' << v.name;
  }
  fail("mat file ", path, ": no variable '", name, "' (variables:", names.str(), ")");
}

}  // namespace mcdl
