// A reader for MATLAB level-5 .mat files (little-endian), enough for dataset annotations such as
// Stanford Cars' devkit (struct arrays of numbers and strings, zlib-compressed as MATLAB and
// scipy.io.savemat write them).
//
// Supported: numeric classes (double, single, int8..uint64; the real part, as double),
// char arrays (UTF-16 / UTF-8 / 8-bit data, returned as UTF-8), cell arrays and struct arrays,
// each possibly inside miCOMPRESSED elements. Sparse, object and function-handle arrays are
// rejected with a message. Every read is bounds-checked; a malformed file fails with its path
// and the byte offset of the bad element.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcdl {

struct MatArray {
  enum class Kind { numeric, text, cell, structure };
  Kind kind = Kind::numeric;
  std::string name;                      // the variable name at the top level, else empty
  std::vector<int64_t> dims;             // MATLAB dimensions, e.g. {1, 8144}
  std::vector<double> numbers;           // numeric: column-major values
  std::string text;                      // text: the characters, column-major, as UTF-8
  std::vector<std::string> field_names;  // structure
  // cell: one array per cell; structure: numel() * field_names.size() arrays, element-major
  // (all fields of element 0, then element 1, ...). Both column-major over dims.
  std::vector<MatArray> elements;

  int64_t numel() const;
  const MatArray& cell(int64_t index) const;                            // cell arrays
  const MatArray& field(int64_t index, const std::string& name) const;  // struct arrays
  double scalar() const;  // a numeric array of exactly one value
};

// Every top-level variable of the file, in file order.
std::vector<MatArray> read_mat_file(const std::string& path);
// The variable called `name` (throws, naming the file and the variables present, if absent).
MatArray read_mat_variable(const std::string& path, const std::string& name);

}  // namespace mcdl
