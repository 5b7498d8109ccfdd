#include "io/npy.h"

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "engine/error.h"
#include "io/durable_file.h"

namespace mcdl {

// Elements are copied byte for byte; the header says little-endian ('<').
static_assert(std::endian::native == std::endian::little, ".npy I/O assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlign = 64;
// numpy.lib.format.GROWTH_AXIS_MAX_DIGITS: spare spaces so that the first axis can grow in place.
constexpr size_t kGrowthAxisMaxDigits = 21;

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return "<f4";
    case DType::i64: return "<i8";
    default: fail("npy: no .npy element type for ", dtype_name(dtype), " (f32 and i64 are supported)");
  }
}

// Python's repr of a shape tuple: (), (7,), (3, 4).
std::string shape_repr(const Shape& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Reads the dict of a .npy header: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// with the keys in any order.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  void parse(std::string& descr, bool& fortran_order, Shape& shape) {
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (skip_spaces() != '}') {
      const std::string key = quoted();
      expect(':');
      if (key == "descr") {
        skip_spaces();
        descr = quoted();
        seen_descr = true;
      } else if (key == "fortran_order") {
        skip_spaces();
        fortran_order = word("True", "False");
        seen_order = true;
      } else if (key == "shape") {
        shape = tuple();
        seen_shape = true;
      } else {
        bad("unknown key '", key, "'");
      }
      if (skip_spaces() != ',') break;
      ++pos_;
    }
    expect('}');
    if (!seen_descr || !seen_order || !seen_shape) bad("the header lacks 'descr', 'fortran_order' or 'shape'");
  }

 private:
  template <class... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail("read_npy: ", path_, ": malformed header: ", parts..., " in \"", text_, "\"");
  }
  char skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void expect(char c) {
    if (skip_spaces() != c) bad("expected '", c, "' at offset ", pos_);
    ++pos_;
  }
  std::string quoted() {
    const char quote = skip_spaces();
    if (quote != '\'' && quote != '"') bad("expected a quoted string at offset ", pos_);
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string::npos) bad("unterminated string at offset ", pos_);
    std::string value = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return value;
  }
  bool word(const char* yes, const char* no) {
    for (const char* w : {yes, no})
      if (text_.compare(pos_, std::strlen(w), w) == 0) {
        pos_ += std::strlen(w);
        return w == yes;
      }
    bad("expected ", yes, " or ", no, " at offset ", pos_);
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (skip_spaces() != ')') {
      if (!std::isdigit(static_cast<unsigned char>(text_[pos_]))) bad("expected a dimension at offset ", pos_);
      int64_t dim = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (dim > (int64_t{1} << 50)) bad("a dimension is too large");
        dim = dim * 10 + (text_[pos_++] - '0');
      }
      shape.push_back(dim);
      if (skip_spaces() != ',') break;
      ++pos_;
    }
    expect(')');
    return shape;
  }

  const std::string& path_;
  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

std::string npy_header(DType dtype, const Shape& shape) {
  std::string dict = std::string("{'descr': '") + descr_of(dtype) + "', 'fortran_order': False, 'shape': " +
                     shape_repr(shape) + ", }";
  if (!shape.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(shape[0]).size(), ' ');
  // numpy's _wrap_header: pad so that magic + version + length + dict + '\n' is a multiple of
  // 64 (a whole 64 spaces when it already is one).
  const size_t prefix = kMagicSize + 2 + 2;
  const size_t padding = kAlign - (prefix + dict.size() + 1) % kAlign;
  const size_t length = dict.size() + padding + 1;
  check(length <= 0xffff, "npy: the header of shape ", shape_str(shape), " needs format version 2.0");
  std::string header(kMagic, kMagicSize);
  header += {'\x01', '\x00', static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  return header + dict + std::string(padding, ' ') + "\n";
}

void write_npy(const std::string& path, const Tensor& array) {
  const Tensor host = array.to(Device::cpu());
  const std::string header = npy_header(host.dtype(), host.shape());
  AtomicFile file(path, "write_npy: " + path);
  file.write(header);
  file.write(host.raw_data(), host.nbytes());
  file.commit();
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "read_npy: cannot open ", path, ": ", std::strerror(errno));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(bytes.size() >= kMagicSize + 4 && bytes.compare(0, kMagicSize, kMagic, kMagicSize) == 0, "read_npy: ", path,
        ": not a .npy file (no \\x93NUMPY magic)");
  const auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
  const size_t major = byte(kMagicSize);
  check(major == 1 || major == 2, "read_npy: ", path, ": format version ", major, ".", byte(kMagicSize + 1),
        " (1.0 and 2.0 are supported)");
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagicSize + 2 + length_bytes;
  check(bytes.size() >= prefix, "read_npy: ", path, ": truncated header");
  size_t length = 0;
  for (size_t i = 0; i < length_bytes; ++i) length |= byte(kMagicSize + 2 + i) << (8 * i);
  check(bytes.size() >= prefix + length, "read_npy: ", path, ": the header says ", length, " bytes, the file has ",
        bytes.size() - prefix);

  std::string descr;
  bool fortran_order = false;
  Shape shape;
  HeaderParser(path, bytes.substr(prefix, length)).parse(descr, fortran_order, shape);
  check(!fortran_order, "read_npy: ", path, ": Fortran-order arrays are not supported");
  DType dtype;
  if (descr == "<f4") {
    dtype = DType::f32;
  } else if (descr == "<i8") {
    dtype = DType::i64;
  } else {
    fail("read_npy: ", path, ": element type '", descr, "' (supported: '<f4', '<i8')");
  }
  // The size the shape needs, checked against the file before anything is allocated: a hostile
  // header can claim any shape.
  uint64_t needed = dtype_size(dtype);
  for (int64_t dim : shape) {
    check(!__builtin_mul_overflow(needed, static_cast<uint64_t>(dim), &needed), "read_npy: ", path, ": the size of shape ",
          shape_str(shape), " overflows");
  }
  const size_t data_size = bytes.size() - prefix - length;
  check(data_size == needed, "read_npy: ", path, ": shape ", shape_str(shape), " of ", descr, " needs ", needed,
        " data bytes, the file has ", data_size);
  Tensor array = empty(shape, dtype, Device::cpu());
  if (data_size > 0) std::memcpy(array.raw_data(), bytes.data() + prefix + length, data_size);
  return array;
}

}  // namespace mcdl
