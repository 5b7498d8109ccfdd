// Philox4x32-10, the counter-based generator of Random123 (Salmon et al., SC'11), as inline
// functions that compile for the host and, under nvcc, for the device. A block of four
// 32-bit words is a pure function of a 128-bit counter and a 64-bit key, so any word of a
// stream can be computed independently of the others and of the thread that asks for it.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"

namespace mcdl {

struct PhiloxBlock {
  uint32_t word[4];
};

constexpr uint32_t philox_multiplier0 = 0xD2511F53u;
constexpr uint32_t philox_multiplier1 = 0xCD9E8D57u;
constexpr uint32_t philox_weyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t philox_weyl1 = 0xBB67AE85u;  // sqrt(3) - 1

MCDL_HOST_DEVICE inline PhiloxBlock philox_round(PhiloxBlock c, uint32_t key0, uint32_t key1) {
  const uint64_t product0 = static_cast<uint64_t>(philox_multiplier0) * c.word[0];
  const uint64_t product1 = static_cast<uint64_t>(philox_multiplier1) * c.word[2];
  const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32), lo0 = static_cast<uint32_t>(product0);
  const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32), lo1 = static_cast<uint32_t>(product1);
  return PhiloxBlock{{hi1 ^ c.word[1] ^ key0, lo1, hi0 ^ c.word[3] ^ key1, lo0}};
}

// The raw generator: ten rounds, the key bumped by the Weyl constants between rounds.
MCDL_HOST_DEVICE inline PhiloxBlock philox4x32_10(PhiloxBlock counter, uint32_t key0, uint32_t key1) {
  PhiloxBlock c = philox_round(counter, key0, key1);
  for (int round = 1; round < 10; ++round) {
    key0 += philox_weyl0;
    key1 += philox_weyl1;
    c = philox_round(c, key0, key1);
  }
  return c;
}

// The engine's layout: key = the 64-bit seed, counter = (64-bit block position, 64-bit
// stream id), low words first.
MCDL_HOST_DEVICE inline PhiloxBlock philox_block(uint64_t seed, uint64_t stream, uint64_t position) {
  const PhiloxBlock counter{{static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
                             static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)}};
  return philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Word `index` of a stream: word i is word i % 4 of block i / 4.
MCDL_HOST_DEVICE inline uint32_t philox_word(uint64_t seed, uint64_t stream, uint64_t index) {
  return philox_block(seed, stream, index >> 2).word[index & 3];
}

// A uniform float in [0, 1) from the top 24 bits of a word: exact in f32, identical on every
// device.
MCDL_HOST_DEVICE inline float philox_uniform_float(uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

// A uniform double in [0, 1) from the top 53 bits of two words (first word high).
MCDL_HOST_DEVICE inline double philox_uniform_double(uint32_t high, uint32_t low) {
  const uint64_t bits = (static_cast<uint64_t>(high) << 32) | low;
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace mcdl
