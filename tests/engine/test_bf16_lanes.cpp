// The array conversions of kernels/cpu/bf16_lanes.h against bf16's scalar constructor and float
// conversion, bit for bit: random bit patterns (NaNs, infinities, subnormals and ties included)
// at lengths that leave a remainder after the sixteen-element groups, and of one group or less
// (the baseline loops; longer arrays take the AVX-512 build where the processor has it).
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/bf16_lanes.h"

using namespace mcdl;

TEST_CASE("bf16 lanes: rounding and widening arrays give the scalar conversions' bits") {
  std::mt19937 rng(5);
  std::vector<float> x;
  for (int i = 0; i < 100000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    float v;
    std::memcpy(&v, &bits, sizeof v);
    x.push_back(v);
  }
  // Exact ties (lower 16 bits 0x8000) both ways, the largest finite floats, NaNs with payloads.
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0xff7fffffu, 0x7fc00001u, 0xffbfffffu, 0x00008000u})
    for (int repeat = 0; repeat < 20; ++repeat) {
      float v;
      std::memcpy(&v, &bits, sizeof v);
      x.push_back(v);
    }
  x.push_back(std::numeric_limits<float>::infinity());
  for (size_t length : {x.size(), size_t(33), size_t(16), size_t(15)}) {
    CAPTURE(length);
    std::vector<bf16> got(length), expected(length);
    cpu::round_to_bf16(x.data(), got.data(), static_cast<int64_t>(length));
    for (size_t i = 0; i < length; ++i) expected[i] = bf16(x[i]);
    CHECK(std::memcmp(got.data(), expected.data(), length * sizeof(bf16)) == 0);
    std::vector<float> widened(length), widened_expected(length);
    cpu::widen_bf16(got.data(), widened.data(), static_cast<int64_t>(length));
    for (size_t i = 0; i < length; ++i) widened_expected[i] = static_cast<float>(got[i]);
    CHECK(std::memcmp(widened.data(), widened_expected.data(), length * sizeof(float)) == 0);
  }
}
