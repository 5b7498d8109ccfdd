// The bfloat16 storage type shared by kernels and the engine.
#pragma once
#include <cstdint>
#include <cstring>

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
template <class T>
MCDL_HOST_DEVICE inline T from_double_value(double value) { return static_cast<T>(value); }
template <>
MCDL_HOST_DEVICE inline bf16 from_double_value<bf16>(double value) { return bf16(static_cast<float>(value)); }

}  // namespace mcdl
