// Tensors from raw little-endian element data in a file (PyTorch storages, numpy array
// buffers): the element types those files hold, their mapping onto the engine's dtypes, and a
// bounds-checked strided gather into a new contiguous CPU tensor.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

// Element types of files. Those without an engine dtype are widened exactly: f16 -> f32,
// i8 / i16 / u16 -> i32, u32 -> i64; bool -> u8 (0 / 1).
enum class RawType : uint8_t { f16, bf16, f32, f64, i8, u8, i16, u16, i32, u32, i64, boolean };

size_t raw_type_size(RawType type);
const char* raw_type_name(RawType type);  // numpy-style: "float16", "uint8", ...
DType raw_type_engine_dtype(RawType type);

// IEEE binary16 -> binary32, exact for every value (subnormals, infinities, NaN payloads).
float half_to_float(uint16_t half);

// A strided view of the elements in `data` (element [i0, i1, ...] at
// offset + Σ i_d·strides[d], in elements) copied into a new contiguous CPU tensor of
// raw_type_engine_dtype(type). Throws "<what>: storage smaller than its tensor's extent ..." when
// the view reaches past the end of `data`, and names bad sizes, strides or offsets likewise. A
// view with more elements than `data` holds (zero or overlapping strides) is limited to 2^26
// elements, so a hostile file cannot demand unbounded memory.
Tensor tensor_from_raw(std::span<const uint8_t> data, RawType type, const Shape& shape,
                       const std::vector<int64_t>& strides, int64_t offset, const std::string& what);

// The row-major (C-order) strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace mcdl
