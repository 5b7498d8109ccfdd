// The first bytes of a file or stream as lower-case hex pairs ("80 02 8a 0a"), for error
// messages that say what a file starts with when it is not what the reader expected.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace mcdl {

inline std::string hex_bytes(std::span<const uint8_t> bytes, size_t at_most = 8) {
  constexpr const char* digits = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < std::min(bytes.size(), at_most); ++i) {
    if (i) hex += ' ';
    hex += digits[bytes[i] >> 4];
    hex += digits[bytes[i] & 15];
  }
  return hex;
}

}  // namespace mcdl
