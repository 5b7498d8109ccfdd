// A kernel that runs kernels/cuda/mma.h's product on fragments loaded by the PTX ISA's layout
// formulas, with its host launcher; tests/emu/test_mma.cpp checks it against a plain product, so
// the emulated mma.sync follows the documented layout (the attention kernel relies on it).
#include "kernels/cuda/mma.h"

namespace mcdl::emu_selftest {

// c [16×8] += a [16×16] · b [16×8], all row-major, one warp; each lane loads and stores only its
// own elements, where the layout says they are.
__global__ void mma_tile(const bf16* a, const bf16* b, float* c) {
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
  const auto pair = [](bf16 low, bf16 high) { return static_cast<uint32_t>(low.bits) | (static_cast<uint32_t>(high.bits) << 16); };
  const uint32_t fa[4] = {pair(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]),
                          pair(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]),
                          pair(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]),
                          pair(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9])};
  const uint32_t fb[2] = {pair(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]),
                          pair(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g])};
  float fc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  cuda::mma_bf16_16816(fc, fa, fb);
  c[g * 8 + 2 * t] = fc[0];
  c[g * 8 + 2 * t + 1] = fc[1];
  c[(g + 8) * 8 + 2 * t] = fc[2];
  c[(g + 8) * 8 + 2 * t + 1] = fc[3];
}

void launch_mma_tile(const bf16* a, const bf16* b, float* c) { cuda::launch(mma_tile, 1, 32, 0, nullptr, a, b, c); }

}  // namespace mcdl::emu_selftest
