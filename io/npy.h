// NumPy's .npy format (numpy.lib.format, version 1.0): the arrays the tools hand to Python,
// e.g. mcdl_features' feature matrix, loadable with numpy.load.
//
// Layout: the magic "\x93NUMPY", the version bytes 1 0, a little-endian u16 header length, the
// header (a Python dict literal, padded with spaces and a final newline so that data starts at a
// multiple of 64 bytes), then the elements row-major (C order), little-endian.
#pragma once
#include <string>

#include "engine/tensor.h"

namespace mcdl {

// The header numpy 1.24's numpy.save writes for a C-order array of this dtype and shape, byte
// for byte (magic, version, length and the padded dict, e.g.
// "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" + spaces + "\n"). f32 → '<f4',
// i64 → '<i8'; other dtypes are refused.
std::string npy_header(DType dtype, const Shape& shape);

// Writes `array` (f32 or i64, any shape, copied to the CPU first) as `path`, through
// "<path>.tmp" fsynced and renamed over `path` (io/durable_file.h), so a failed write never
// leaves a truncated file. Errors name the path and the OS error.
void write_npy(const std::string& path, const Tensor& array);

// Reads a version 1.0 or 2.0 .npy file of '<f4' or '<i8' elements in C order into a CPU
// tensor. Anything else (another dtype, Fortran order, a malformed header, a data size that
// does not match the shape) throws naming the path and the problem.
Tensor read_npy(const std::string& path);

}  // namespace mcdl
