// A fast 64-bit fingerprint of bytes: FNV-1a's constants over 8-byte words, then the tail byte by
// byte. For fingerprints that only need to tell contents apart (a checkpoint's frozen weights,
// the program file of each rank); its values are stored in checkpoints, so it never changes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mcdl {

inline constexpr uint64_t kByteHashStart = 0xCBF29CE484222325ull;

inline void hash_bytes(uint64_t& h, const void* data, size_t bytes) {
  constexpr uint64_t prime = 0x100000001B3ull;
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {  // a word at a time: 344 MB in a fraction of a second
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * prime;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * prime;
}

}  // namespace mcdl
