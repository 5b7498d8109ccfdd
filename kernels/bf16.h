// The bfloat16 storage type shared by kernels and the engine.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/host_device.h"

namespace mcdl {

// bfloat16 as stored: the upper 16 bits of an IEEE float. Conversion from float rounds to
// nearest even (PyTorch's behaviour); NaN stays NaN.
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  MCDL_HOST_DEVICE explicit bf16(float value) {
    uint32_t word;
    std::memcpy(&word, &value, 4);
    if ((word & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((word >> 16) | 0x40u);  // quiet NaN
    } else {
      uint32_t rounding = 0x7fffu + ((word >> 16) & 1u);
      bits = static_cast<uint16_t>((word + rounding) >> 16);
    }
  }
  MCDL_HOST_DEVICE explicit operator float() const {
    uint32_t word = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &word, 4);
    return value;
  }
};

// Value conversions usable on any element type, bf16 included.
template <class T>
MCDL_HOST_DEVICE inline double to_double_value(T value) { return static_cast<double>(value); }
MCDL_HOST_DEVICE inline double to_double_value(bf16 value) { return static_cast<double>(static_cast<float>(value)); }
// To an integer type: truncate toward zero, then wrap modulo 2^bits as an integer
// conversion does (-5.0 → 251 in u8, as PyTorch gives on x86). NaN gives 0 and values past
// the int64 range saturate first. C++ leaves out-of-range float → integer casts undefined,
// and GPUs saturate where x86 wraps: this keeps every device on the same answer.
template <class T>
MCDL_HOST_DEVICE inline T from_double_value(double value) {
  if constexpr (std::is_integral_v<T>) {
    if (!(value == value)) return T(0);
    if (value >= 9223372036854775807.0) return static_cast<T>(INT64_MAX);
    if (value <= -9223372036854775808.0) return static_cast<T>(INT64_MIN);
    return static_cast<T>(static_cast<int64_t>(value));
  } else {
    return static_cast<T>(value);
  }
}
template <>
MCDL_HOST_DEVICE inline bf16 from_double_value<bf16>(double value) { return bf16(static_cast<float>(value)); }

}  // namespace mcdl
