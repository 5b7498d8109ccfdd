#include "io/numpy_pickle.h"

#include <span>

#include "io/raw_tensor.h"

namespace mcdl {

namespace {

using K = PickleValue::Kind;

const PickleValue& item(const PickleValue& tuple, size_t i, const char* what) {
  check(tuple.is(K::tuple) && tuple.items().size() > i, "numpy array: ", what, " is ", tuple.describe(),
        ", expected a tuple of at least ", i + 1);
  return tuple.items()[i];
}

bool is_reconstruct(const std::string& name) {
  return name == "numpy.core.multiarray._reconstruct" || name == "numpy._core.multiarray._reconstruct";
}

// numpy.dtype(name, align, copy) + BUILD (version, byteorder, ...).
RawType element_type(const PickleValue& dtype) {
  check(dtype.is(K::object) && dtype.object_global() == "numpy.dtype", "numpy array: dtype is ", dtype.describe(),
        ", not a numpy.dtype");
  const std::string& name = item(dtype.object_args(), 0, "dtype arguments").text();
  const PickleValue& state = dtype.object_state();
  if (!state.is_none()) {
    const std::string& order = item(state, 1, "dtype state").text();
    check(order == "<" || order == "|" || order == "=", "numpy array: byte order '", order,
          "' is not supported (little-endian only)");
  }
  static const std::pair<const char*, RawType> kTypes[] = {
      {"u1", RawType::u8},  {"b1", RawType::boolean}, {"i1", RawType::i8},  {"i2", RawType::i16},
      {"u2", RawType::u16}, {"i4", RawType::i32},     {"u4", RawType::u32}, {"i8", RawType::i64},
      {"f2", RawType::f16}, {"f4", RawType::f32},     {"f8", RawType::f64},
  };
  for (const auto& [code, type] : kTypes) {
    if (name == code) return type;
  }
  fail("numpy array: dtype '", name, "' is not supported (u1, b1, i1, i2, u2, i4, u4, i8, f2, f4, f8)");
}

}  // namespace

PickleGlobals numpy_array_globals() {
  return {
      {"numpy.core.multiarray._reconstruct", {}},
      {"numpy._core.multiarray._reconstruct", {}},
      {"numpy.ndarray", {}},
      {"numpy.dtype", {}},
      {"_codecs.encode", pickle_call_codecs_encode},
      {"__builtin__.bytes", pickle_call_empty_bytes},
      {"builtins.bytes", pickle_call_empty_bytes},
  };
}

Tensor numpy_array_from_pickle(const PickleValue& array) {
  check(array.is(K::object) && is_reconstruct(array.object_global()),
        "numpy array: expected a pickled ndarray "
        "(numpy.core.multiarray._reconstruct), got ",
        array.describe());
  const PickleValue& subtype = item(array.object_args(), 0, "_reconstruct arguments");
  check(subtype.is(K::global) && subtype.global_name() == "numpy.ndarray", "numpy array: subtype ", subtype.describe(),
        " is not numpy.ndarray");
  const PickleValue& state = array.object_state();
  check(!state.is_none(), "numpy array: the array has no state (BUILD missing)");
  check(item(state, 0, "state").as_int() == 1, "numpy array: state version ", state.items()[0].describe(), " is not 1");
  Shape shape;
  for (const PickleValue& size : item(state, 1, "state").items()) shape.push_back(size.as_int());
  const RawType type = element_type(item(state, 2, "state"));
  const bool fortran = item(state, 3, "state").as_int() != 0;
  const PickleValue& data = item(state, 4, "state");
  check(data.is(K::bytes), "numpy array: data is ", data.describe(),
        ", expected bytes (object arrays are not supported)");

  // Fortran order: the first index varies fastest.
  std::vector<int64_t> strides = contiguous_strides(shape);
  if (fortran) {
    int64_t step = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      strides[d] = step;
      step *= shape[d];
    }
  }
  const std::string& raw = data.as_bytes();
  const std::string what = std::string("numpy array ") + raw_type_name(type) + shape_str(shape);
  uint64_t needed = raw_type_size(type);
  for (int64_t size : shape) {
    check(size >= 0 && !__builtin_mul_overflow(needed, static_cast<uint64_t>(size), &needed), "numpy array: bad shape ",
          shape_str(shape));
  }
  check(raw.size() == needed, "numpy array: data holds ", raw.size(), " bytes but ", raw_type_name(type),
        shape_str(shape), " needs ", needed);
  return tensor_from_raw(std::span(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), type, shape, strides, 0,
                         what);
}

}  // namespace mcdl
