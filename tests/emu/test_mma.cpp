// The emulated mma.sync of kernels/cuda/mma.h against a plain product, with fragments loaded by the
// PTX ISA's layout formulas (tests/emu/emu_mma_kernels.cu), in every thread order.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>

#include "kernels/bf16.h"
#include "kernels/emu/error.h"
#include "kernels/emu/thread_order.h"

namespace mcdl::emu_selftest {
void launch_mma_tile(const bf16* a, const bf16* b, float* c);
void launch_ldmatrix_tile(const bf16* m, uint32_t* out, uint16_t* early);
void launch_ldmatrix_misaligned(int lane, int offset_bytes, uint32_t* out);
}  // namespace mcdl::emu_selftest

using mcdl::bf16;

TEST_CASE("emulator: mma.sync m16n8k16 follows the PTX ISA's fragment layout") {
  mcdl::emu::for_each_thread_order([](mcdl::emu::ThreadOrder) {
    std::array<bf16, 16 * 16> a;
    std::array<bf16, 16 * 8> b;
    std::array<float, 16 * 8> c, expected;
    uint32_t seed = 7;
    const auto small = [&seed] {  // multiples of 1/8 in [-2, 2): every product and sum exact
      seed = seed * 1664525u + 1013904223u;
      return static_cast<float>(static_cast<int>(seed >> 27) - 16) / 8.0f;
    };
    for (bf16& x : a) x = bf16(small());
    for (bf16& x : b) x = bf16(small());
    for (float& x : c) x = small();
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 8; ++n) {
        float sum = c[static_cast<size_t>(r * 8 + n)];
        for (int k = 0; k < 16; ++k)
          sum += static_cast<float>(a[static_cast<size_t>(r * 16 + k)]) * static_cast<float>(b[static_cast<size_t>(k * 8 + n)]);
        expected[static_cast<size_t>(r * 8 + n)] = sum;
      }
    mcdl::emu_selftest::launch_mma_tile(a.data(), b.data(), c.data());
    for (size_t i = 0; i < c.size(); ++i) if (c[i] != expected[i]) { MESSAGE("at ", i / 8, ",", i % 8, ": ", c[i], " vs ", expected[i]); break; }
    CHECK(c == expected);
  });
}

TEST_CASE("emulator: ldmatrix gives mma.sync's B fragments, as they lie and transposed; cp.async lands at its wait") {
  mcdl::emu::for_each_thread_order([](mcdl::emu::ThreadOrder) {
    std::array<bf16, 4 * 8 * 8> m;
    for (size_t i = 0; i < m.size(); ++i) m[i] = bf16(static_cast<float>(i + 1));  // distinct, exact in bf16
    std::array<uint32_t, 32 * 8> out{};
    std::array<uint16_t, 32> early{};
    mcdl::emu_selftest::launch_ldmatrix_tile(m.data(), out.data(), early.data());
    const auto at = [&](int matrix, int row, int col) { return static_cast<uint32_t>(m[static_cast<size_t>((matrix * 8 + row) * 8 + col)].bits); };
    int wrong = 0;
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane / 4, t = lane % 4;
      for (int i = 0; i < 4; ++i) {
        wrong += out[static_cast<size_t>(lane * 8 + i)] != (at(i, g, 2 * t) | at(i, g, 2 * t + 1) << 16);
        wrong += out[static_cast<size_t>(lane * 8 + 4 + i)] != (at(i, 2 * t, g) | at(i, 2 * t + 1, g) << 16);
      }
      // The emulator lands a copy at the latest moment the hardware may: its wait.
      CHECK(early[static_cast<size_t>(lane)] == bf16(0.0f).bits);
    }
    CHECK(wrong == 0);
  });
}

TEST_CASE("emulator: ldmatrix reports a row address that is not 16-byte aligned, with the lane") {
  std::array<uint32_t, 32> out{};
  const auto error = [&](int lane, int offset_bytes) -> std::string {
    try {
      mcdl::emu_selftest::launch_ldmatrix_misaligned(lane, offset_bytes, out.data());
    } catch (const mcdl::emu::EmulationError& e) {
      return e.what();
    }
    return "";
  };
  const std::string misaligned = error(13, 8);
  CHECK(misaligned.find("ldmatrix.x4 (") != std::string::npos);
  CHECK(misaligned.find("lane 13's row address") != std::string::npos);
  CHECK(misaligned.find("is not 16-byte aligned") != std::string::npos);
  CHECK(error(0, 2).find("lane 0's row address") != std::string::npos);
  CHECK(error(5, 16).empty());  // another row, still aligned: ldmatrix reads it
  CHECK(error(5, 0).empty());
}
