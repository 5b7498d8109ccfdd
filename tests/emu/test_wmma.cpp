// The emulator's WMMA (kernels/emu/wmma.h), through the kernels of tests/emu/emu_wmma_kernels.cu:
// products against a plain CPU product in every layout, the fragments' element mapping, and
// the misuses CUDA documents, each reported with its call site.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/emu/error.h"
#include "kernels/emu/thread_order.h"

// The host launchers of tests/emu/emu_wmma_kernels.cu.
namespace mcdl::emu_selftest {
void launch_tile_product(const bf16* a, unsigned lda, bool a_column_major, const bf16* b, unsigned ldb,
                         bool b_column_major, const float* c, float* d, float* d2, unsigned ldc, bool c_column_major,
                         int warps, int tile_stride);
void launch_fragment_contents(const float* positions, const bf16* positions16, float* out);
void launch_misuse(const bf16* a, float* c, int fault);
}  // namespace mcdl::emu_selftest

using mcdl::bf16;
using mcdl::emu::for_each_thread_order;
using mcdl::emu::ThreadOrder;
namespace kernels = mcdl::emu_selftest;

namespace {

constexpr int ld = 24;               // leading dimension of every matrix: 48 bytes of bf16, 96 of float
constexpr int tile_stride = 16 * ld;  // warp w's tiles start w·tile_stride elements in
constexpr int warps = 2;
constexpr int capacity = warps * tile_stride;

// Tiles 32-byte aligned, as WMMA requires.
struct Tiles {
  alignas(32) std::array<bf16, capacity> a, b;
  alignas(32) std::array<float, capacity> c, d, d2;
};

// Element (row, col) of the tile of warp w stored in `column_major` order.
size_t at(int w, int row, int col, bool column_major) {
  return static_cast<size_t>(w * tile_stride + (column_major ? col * ld + row : row * ld + col));
}

uint32_t next(uint32_t& seed) { return seed = seed * 1664525u + 1013904223u; }

template <class Launch>
std::string emulation_error(Launch launch) {
  try {
    launch();
  } catch (const mcdl::emu::EmulationError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("emu: wmma mma_sync of bf16 tiles equals a CPU product, in every layout, warp and thread order") {
  // Random bf16 values: every product is exact in fp32; the sums are compared in double.
  for (const bool a_col : {false, true})
    for (const bool b_col : {false, true})
      for (const bool c_col : {false, true}) {
        Tiles t;
        t.a.fill(bf16(NAN));  // the padding between rows is never read
        t.b.fill(bf16(NAN));
        t.c.fill(NAN);
        uint32_t seed = 7u + 4u * a_col + 2u * b_col + c_col;
        const auto value = [&] { return static_cast<float>(static_cast<int>(next(seed) >> 16) % 2001 - 1000) / 256.0f; };
        for (int w = 0; w < warps; ++w)
          for (int row = 0; row < 16; ++row)
            for (int col = 0; col < 16; ++col) {
              t.a[at(w, row, col, a_col)] = bf16(value());
              t.b[at(w, row, col, b_col)] = bf16(value());
              t.c[at(w, row, col, c_col)] = value();
            }
        for_each_thread_order([&](ThreadOrder order) {
          INFO("a " << (a_col ? "col" : "row") << "-major, b " << (b_col ? "col" : "row") << "-major, c "
                    << (c_col ? "col" : "row") << "-major, " << std::string(to_string(order)) << " order");
          t.d.fill(NAN);
          t.d2.fill(NAN);
          kernels::launch_tile_product(t.a.data(), ld, a_col, t.b.data(), ld, b_col, t.c.data(), t.d.data(),
                                       t.d2.data(), ld, c_col, warps, tile_stride);
          for (int w = 0; w < warps; ++w)
            for (int row = 0; row < 16; ++row)
              for (int col = 0; col < 16; ++col) {
                double expected = t.c[at(w, row, col, c_col)], magnitude = std::fabs(expected);
                for (int k = 0; k < 16; ++k) {
                  const double p = static_cast<double>(static_cast<float>(t.a[at(w, row, k, a_col)])) *
                                   static_cast<float>(t.b[at(w, k, col, b_col)]);
                  expected += p;
                  magnitude += std::fabs(p);
                }
                const float got = t.d[at(w, row, col, c_col)];
                // 17 fp32 additions, each rounding by at most 2^-24 of the running magnitude.
                CHECK(std::fabs(got - expected) <= 17 * 0x1p-24 * magnitude);
                CHECK(t.d2[at(w, row, col, c_col)] == 2.0f * got);
              }
          // Only the tiles were written: the padding after the first row (or column) keeps its NaN.
          CHECK(std::isnan(t.d[16]));
        });
      }
}

TEST_CASE("emu: wmma fragments hold 8 elements per lane in a mapping that differs by use and thread order") {
  alignas(32) std::array<float, 256> positions;
  alignas(32) std::array<bf16, 256> positions16;
  std::iota(positions.begin(), positions.end(), 0.0f);
  for (int i = 0; i < 256; ++i) positions16[static_cast<size_t>(i)] = bf16(static_cast<float>(i));  // exact in bf16
  std::vector<std::vector<float>> accumulators;
  for_each_thread_order([&](ThreadOrder order) {
    INFO(std::string(to_string(order)) << " order");
    std::vector<float> out(3 * 256, NAN);
    kernels::launch_fragment_contents(positions.data(), positions16.data(), out.data());
    std::array<std::vector<float>, 3> held;
    for (int e = 0; e < 256; ++e)
      for (int f = 0; f < 3; ++f) held[static_cast<size_t>(f)].push_back(out[static_cast<size_t>(3 * e + f)]);
    for (const std::vector<float>& fragment : held) {
      std::vector<float> sorted = fragment;
      std::sort(sorted.begin(), sorted.end());
      CHECK(sorted == std::vector<float>(positions.begin(), positions.end()));  // each element exactly once
    }
    CHECK(held[0] != held[1]);
    CHECK(held[0] != held[2]);
    CHECK(held[1] != held[2]);
    accumulators.push_back(held[2]);
  });
  CHECK(accumulators[0] != accumulators[1]);
  CHECK(accumulators[1] != accumulators[2]);
  CHECK(accumulators[0] != accumulators[2]);
}

TEST_CASE("emu: wmma misuse is reported with its call site, never run") {
  Tiles t;
  const auto error = [&](int fault) {
    return emulation_error([&] { kernels::launch_misuse(t.a.data(), t.c.data(), fault); });
  };
  const std::string misaligned = error(0);
  CHECK(misaligned.find("wmma::store_matrix_sync (") != std::string::npos);
  CHECK(misaligned.find("emu_wmma_kernels.cu:") != std::string::npos);
  CHECK(misaligned.find("is not 256-bit (32-byte) aligned") != std::string::npos);
  CHECK(misaligned.find("thread (0,0,0)") != std::string::npos);
  CHECK(error(1).find("wmma::load_matrix_sync (") != std::string::npos);
  CHECK(error(1).find("ldm 12 is not a multiple of 8 elements (16 bytes)") != std::string::npos);
  CHECK(error(2).find("ldm 6 is not a multiple of 4 elements (16 bytes)") != std::string::npos);
  const std::string lanes_differ = error(3);
  CHECK(lanes_differ.find("block (0,0,0), warp 0: wmma::load_matrix_sync (") != std::string::npos);
  CHECK(lanes_differ.find("lane 1 passed another pointer, ldm or layout than lane 0") != std::string::npos);
  const std::string half_warp = error(4);
  CHECK(half_warp.find("a warp operation can never complete") != std::string::npos);
  CHECK(half_warp.find("threads 0-15: wait at wmma::store_matrix_sync (mask 0xffffffff") != std::string::npos);
  CHECK(half_warp.find("threads 16-31: exited") != std::string::npos);
  CHECK(error(5).find("needs all 32 lanes, but this warp of the block has 16") != std::string::npos);
  // A correct call still runs after the aborted launches.
  CHECK(error(6).empty());
}
