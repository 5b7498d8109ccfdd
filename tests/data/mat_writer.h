// A minimal MATLAB level-5 writer for tests: doubles, char arrays, cells and struct arrays,
// each variable optionally zlib-compressed (miCOMPRESSED), as MATLAB and scipy.io.savemat do.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mcdl::test {

struct MatValue {
  enum class Kind { number, text, cell, structure } kind = Kind::number;
  std::vector<int64_t> dims{1, 1};
  std::vector<double> numbers;
  std::string text;                    // ASCII
  std::vector<std::string> fields;     // structure
  std::vector<MatValue> elements;      // cell, or element-major struct fields

  static MatValue number(double v) { MatValue m; m.numbers = {v}; return m; }
  static MatValue string(const std::string& s) {
    MatValue m;
    m.kind = Kind::text;
    m.dims = {1, static_cast<int64_t>(s.size())};
    m.text = s;
    return m;
  }
  // A 1 x n struct array; `rows` holds each element's field values in `fields` order.
  static MatValue structs(const std::vector<std::string>& fields, const std::vector<std::vector<MatValue>>& rows) {
    MatValue m;
    m.kind = Kind::structure;
    m.dims = {1, static_cast<int64_t>(rows.size())};
    m.fields = fields;
    for (const auto& row : rows) m.elements.insert(m.elements.end(), row.begin(), row.end());
    return m;
  }
};

class MatWriter {
 public:
  void add(const std::string& name, const MatValue& value, bool compressed) {
    std::vector<uint8_t> element = matrix(name, value);
    if (!compressed) {
      body_.insert(body_.end(), element.begin(), element.end());
      return;
    }
    uLongf size = compressBound(element.size());
    std::vector<uint8_t> packed(size);
    if (compress(packed.data(), &size, element.data(), element.size()) != Z_OK) throw std::runtime_error("compress");
    packed.resize(size);
    tag(body_, 15, packed.size());
    body_.insert(body_.end(), packed.begin(), packed.end());  // compressed elements are not padded
  }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out(128, ' ');
    const char text[] = "MATLAB 5.0 MAT-file, written by the mcdl tests";
    std::memcpy(out.data(), text, sizeof(text) - 1);
    out[124] = 0x00;
    out[125] = 0x01;
    out[126] = 'I';
    out[127] = 'M';
    out.insert(out.end(), body_.begin(), body_.end());
    return out;
  }

  void save(const std::string& path) const {
    const std::vector<uint8_t> b = bytes();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }

 private:
  static void put32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void tag(std::vector<uint8_t>& out, uint32_t type, size_t size) {
    put32(out, type);
    put32(out, static_cast<uint32_t>(size));
  }
  static void element(std::vector<uint8_t>& out, uint32_t type, const void* data, size_t size) {
    tag(out, type, size);
    const auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + size);
    while (out.size() % 8 != 0) out.push_back(0);
  }

  static std::vector<uint8_t> matrix(const std::string& name, const MatValue& v) {
    std::vector<uint8_t> c;
    const uint32_t mx_class = v.kind == MatValue::Kind::number ? 6 : v.kind == MatValue::Kind::text ? 4
                              : v.kind == MatValue::Kind::cell ? 1 : 2;
    const uint32_t flags[2] = {mx_class, 0};
    element(c, 6, flags, 8);
    std::vector<int32_t> dims(v.dims.begin(), v.dims.end());
    element(c, 5, dims.data(), dims.size() * 4);
    element(c, 1, name.data(), name.size());
    if (v.kind == MatValue::Kind::number) {
      element(c, 9, v.numbers.data(), v.numbers.size() * 8);
    } else if (v.kind == MatValue::Kind::text) {
      std::vector<uint16_t> units(v.text.begin(), v.text.end());
      element(c, 4, units.data(), units.size() * 2);
    } else if (v.kind == MatValue::Kind::cell) {
      for (const MatValue& e : v.elements) append(c, matrix("", e));
    } else {
      const int32_t length = 32;
      element(c, 5, &length, 4);
      std::vector<char> names(v.fields.size() * length, 0);
      for (size_t f = 0; f < v.fields.size(); ++f) std::memcpy(names.data() + f * length, v.fields[f].data(), v.fields[f].size());
      element(c, 1, names.data(), names.size());
      for (const MatValue& e : v.elements) append(c, matrix("", e));
    }
    std::vector<uint8_t> out;
    tag(out, 14, c.size());
    append(out, c);
    return out;
  }
  static void append(std::vector<uint8_t>& out, const std::vector<uint8_t>& more) { out.insert(out.end(), more.begin(), more.end()); }

  std::vector<uint8_t> body_;
};

}  // namespace mcdl::test
