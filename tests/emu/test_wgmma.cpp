// The emulated wgmma of kernels/cuda/wgmma.h against a plain product, with operands placed by the
// PTX ISA's layouts (tests/emu/emu_wgmma_kernels.cu): both majors of B, two placements of its core
// matrices (so that the leading and stride offsets cannot be swapped unnoticed), with and without
// accumulation, in every thread order; the product lands at the wait; a missing fence (either of
// the two), a swizzled layout and a B that reaches past shared memory or lies outside it are reported. And the 48 KB default of dynamic shared memory.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/emu/error.h"
#include "kernels/emu/thread_order.h"

namespace mcdl::emu_selftest {
void launch_wgmma_tile(const bf16* a, const bf16* b, float* d, float* early, bool transpose_b, bool accumulate,
                       unsigned leading, unsigned stride, bool skip_fence, bool skip_publish, bool swizzle);
void launch_touch_shared(int* out, size_t bytes, bool opt_in);
void launch_descriptor_of_global(const bf16* global, uint64_t* out);
}  // namespace mcdl::emu_selftest

using mcdl::bf16;

namespace {

struct Operands {
  std::vector<bf16> a = std::vector<bf16>(64 * 16), b = std::vector<bf16>(16 * 64);
  std::vector<float> c = std::vector<float>(64 * 64);
};

Operands random_operands(uint32_t seed) {
  Operands x;
  const auto small = [&seed] {  // multiples of 1/8 in [-2, 2): every product and sum exact
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int>(seed >> 27) - 16) / 8.0f;
  };
  for (bf16& v : x.a) v = bf16(small());
  for (bf16& v : x.b) v = bf16(small());
  for (float& v : x.c) v = small();
  return x;
}

std::vector<float> plain_product(const Operands& x, bool accumulate) {
  std::vector<float> d(64 * 64);
  for (int r = 0; r < 64; ++r)
    for (int n = 0; n < 64; ++n) {
      float sum = accumulate ? x.c[static_cast<size_t>(r * 64 + n)] : 0.0f;
      for (int k = 0; k < 16; ++k)
        sum += static_cast<float>(x.a[static_cast<size_t>(r * 16 + k)]) * static_cast<float>(x.b[static_cast<size_t>(k * 64 + n)]);
      d[static_cast<size_t>(r * 64 + n)] = sum;
    }
  return d;
}

std::string launch_error(bool skip_fence, bool skip_publish, bool swizzle, unsigned stride = 256) {
  const Operands x = random_operands(3);
  std::vector<float> d = x.c, early(d.size());
  try {
    mcdl::emu_selftest::launch_wgmma_tile(x.a.data(), x.b.data(), d.data(), early.data(), false, true, 128, stride,
                                          skip_fence, skip_publish, swizzle);
  } catch (const mcdl::emu::EmulationError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("emulator: wgmma m64n64k16 follows the PTX ISA's register and shared-memory layouts") {
  struct Placement {
    unsigned leading, stride;
  };
  mcdl::emu::for_each_thread_order([](mcdl::emu::ThreadOrder) {
    uint32_t seed = 11;
    for (const bool transpose_b : {false, true})
      for (const Placement p : {Placement{128, 256}, Placement{1024, 128}})
        for (const bool accumulate : {false, true}) {
          CAPTURE(transpose_b);
          CAPTURE(p.leading);
          CAPTURE(accumulate);
          const Operands x = random_operands(++seed);
          std::vector<float> d = x.c, early(d.size());
          mcdl::emu_selftest::launch_wgmma_tile(x.a.data(), x.b.data(), d.data(), early.data(), transpose_b, accumulate,
                                                p.leading, p.stride, false, false, false);
          CHECK(d == plain_product(x, accumulate));
          CHECK(early == x.c);  // between the issue and the wait, the accumulators are as they were
        }
  });
}

TEST_CASE("emulator: wgmma reports missing fences, a swizzled layout, B past or outside shared memory") {
  CHECK(launch_error(false, false, false).empty());
  const std::string unfenced = launch_error(true, false, false);
  CHECK(unfenced.find("no wgmma.fence since the warpgroup last waited") != std::string::npos);
  const std::string unpublished = launch_error(false, true, false);
  CHECK(unpublished.find("never called fence.proxy.async") != std::string::npos);
  const std::string swizzled = launch_error(false, false, true);
  CHECK(swizzled.find("wgmma.mma_async (") != std::string::npos);
  CHECK(swizzled.find("only the layout without swizzle is emulated") != std::string::npos);
  // 2048 bytes of shared memory: with 512 bytes between core matrices along N, the fifth starts past them.
  const std::string outside = launch_error(false, false, false, 512);
  CHECK(outside.find("the B descriptor reaches byte 2048 of shared memory, past the 2048 the launch has") !=
        std::string::npos);
  // A matrix descriptor of global memory: cvta.to.shared has no address for it.
  std::array<bf16, 8> global{};
  std::array<uint64_t, 32> descriptors{};
  std::string not_shared;
  try {
    mcdl::emu_selftest::launch_descriptor_of_global(global.data(), descriptors.data());
  } catch (const mcdl::emu::EmulationError& e) {
    not_shared = e.what();
  }
  CHECK(not_shared.find("the address is not in the launch's dynamic shared memory") != std::string::npos);
}

TEST_CASE("emulator: more than 48 KB of dynamic shared memory needs the kernel's cudaFuncSetAttribute") {
  std::array<int, 32> out{};
  std::string error;
  try {
    mcdl::emu_selftest::launch_touch_shared(out.data(), 64 * 1024, false);
  } catch (const mcdl::emu::EmulationError& e) {
    error = e.what();
  }
  CHECK(error.find("65536 bytes of dynamic shared memory exceed the kernel's 49152") != std::string::npos);
  CHECK(error.find("cudaFuncAttributeMaxDynamicSharedMemorySize") != std::string::npos);
  mcdl::emu_selftest::launch_touch_shared(out.data(), 48 * 1024, false);
  CHECK(out[31] == 1);
  out.fill(0);
  mcdl::emu_selftest::launch_touch_shared(out.data(), 64 * 1024, true);
  CHECK(out[31] == 1);
}
