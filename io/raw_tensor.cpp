#include "io/raw_tensor.h"

#include <bit>
#include <cstring>

namespace mcdl {

static_assert(std::endian::native == std::endian::little, "raw tensor data is read as little-endian");

namespace {

constexpr int64_t kMaxExpandedElements = int64_t{1} << 26;

struct RawInfo {
  const char* name;
  size_t size;
  DType engine;
};

RawInfo info(RawType type) {
  switch (type) {
    case RawType::f16:
      return {"float16", 2, DType::f32};
    case RawType::bf16:
      return {"bfloat16", 2, DType::bf16};
    case RawType::f32:
      return {"float32", 4, DType::f32};
    case RawType::f64:
      return {"float64", 8, DType::f64};
    case RawType::i8:
      return {"int8", 1, DType::i32};
    case RawType::u8:
      return {"uint8", 1, DType::u8};
    case RawType::i16:
      return {"int16", 2, DType::i32};
    case RawType::u16:
      return {"uint16", 2, DType::i32};
    case RawType::i32:
      return {"int32", 4, DType::i32};
    case RawType::u32:
      return {"uint32", 4, DType::i64};
    case RawType::i64:
      return {"int64", 8, DType::i64};
    case RawType::boolean:
      return {"bool", 1, DType::u8};
  }
  fail("raw tensor: unknown element type");
}

template <class Src>
Src load(const uint8_t* p) {
  Src v;
  std::memcpy(&v, p, sizeof(Src));
  return v;
}

// Writes element `index` of the output from the raw element at `src`.
void convert_element(RawType type, const uint8_t* src, void* out, int64_t index) {
  switch (type) {
    case RawType::f16:
      static_cast<float*>(out)[index] = half_to_float(load<uint16_t>(src));
      return;
    case RawType::i8:
      static_cast<int32_t*>(out)[index] = load<int8_t>(src);
      return;
    case RawType::i16:
      static_cast<int32_t*>(out)[index] = load<int16_t>(src);
      return;
    case RawType::u16:
      static_cast<int32_t*>(out)[index] = load<uint16_t>(src);
      return;
    case RawType::u32:
      static_cast<int64_t*>(out)[index] = load<uint32_t>(src);
      return;
    case RawType::boolean:
      static_cast<uint8_t*>(out)[index] = *src != 0;
      return;
    default: {  // same representation in the engine
      const size_t size = info(type).size;
      std::memcpy(static_cast<uint8_t*>(out) + static_cast<size_t>(index) * size, src, size);
    }
  }
}

bool same_representation(RawType type) {
  return type == RawType::bf16 || type == RawType::f32 || type == RawType::f64 || type == RawType::u8 ||
         type == RawType::i32 || type == RawType::i64;
}

}  // namespace

size_t raw_type_size(RawType type) { return info(type).size; }
const char* raw_type_name(RawType type) { return info(type).name; }
DType raw_type_engine_dtype(RawType type) { return info(type).engine; }

float half_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  uint32_t word;
  if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    word = sign;
  } else {  // subnormal: normalise the mantissa into a float exponent
    uint32_t shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    word = sign | ((113 - shift) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(word);
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= shape[d];
  }
  return strides;
}

Tensor tensor_from_raw(std::span<const uint8_t> data, RawType type, const Shape& shape,
                       const std::vector<int64_t>& strides, int64_t offset, const std::string& what) {
  const size_t element = raw_type_size(type);
  const int64_t capacity = static_cast<int64_t>(data.size() / element);
  check(strides.size() == shape.size(), what, ": shape ", shape_str(shape), " has ", shape.size(),
        " dimensions but the strides ", shape_str(strides), " have ", strides.size());
  check(offset >= 0, what, ": negative storage offset ", offset);
  int64_t numel = 1, last = offset;  // last: the index of the view's final element
  for (size_t d = 0; d < shape.size(); ++d) {
    check(shape[d] >= 0, what, ": negative size in shape ", shape_str(shape));
    check(strides[d] >= 0, what, ": negative stride in ", shape_str(strides), " (not written by PyTorch or numpy)");
    check(!__builtin_mul_overflow(numel, shape[d], &numel), what, ": the element count of ", shape_str(shape),
          " overflows");
  }
  if (numel > 0) {
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t reach;
      check(!__builtin_mul_overflow(shape[d] - 1, strides[d], &reach) && !__builtin_add_overflow(last, reach, &last),
            what, ": the extent of shape ", shape_str(shape), " with strides ", shape_str(strides), " overflows");
    }
    check(last < capacity, what, ": storage smaller than its tensor's extent: shape ", shape_str(shape),
          " with strides ", shape_str(strides), " from offset ", offset, " reaches element ", last,
          " but the storage holds ", capacity, " ", raw_type_name(type), " elements");
  }
  // Zero or overlapping strides can describe far more elements than the storage holds; the copy
  // materialises them, so a hostile file could ask for any amount of memory.
  check(numel <= capacity || numel <= kMaxExpandedElements, what, ": shape ", shape_str(shape), " with strides ",
        shape_str(strides), " expands ", capacity, " stored elements to ", numel, ", beyond the limit of ",
        kMaxExpandedElements, " for overlapping views");

  Tensor out = empty(shape, raw_type_engine_dtype(type));
  if (numel == 0) return out;
  const uint8_t* base = data.data();
  if (same_representation(type) && strides == contiguous_strides(shape)) {
    std::memcpy(out.raw_data(), base + static_cast<size_t>(offset) * element, static_cast<size_t>(numel) * element);
    return out;
  }
  // Odometer over the C-order index; `source` tracks offset + Σ index_d·stride_d.
  std::vector<int64_t> index(shape.size(), 0);
  int64_t source = offset;
  void* dst = out.raw_data();
  for (int64_t i = 0; i < numel; ++i) {
    convert_element(type, base + static_cast<size_t>(source) * element, dst, i);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) {
        source += strides[d];
        break;
      }
      source -= (shape[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace mcdl
