// A kernel that runs kernels/cuda/mma.h's product on fragments loaded by the PTX ISA's layout
// formulas, with its host launcher; tests/emu/test_mma.cpp checks it against a plain product, so
// the emulated mma.sync follows the documented layout (the attention kernel relies on it).
#include "kernels/cuda/async_copy.h"
#include "kernels/cuda/mma.h"

namespace mcdl::emu_selftest {

// c [16×8] += a [16×16] · b [16×8], all row-major, one warp; each lane loads and stores only its
// own elements, where the layout says they are.
__global__ void mma_tile(const bf16* a, const bf16* b, float* c) {
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
  const uint32_t fa[4] = {cuda::pair_bits(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]),
                          cuda::pair_bits(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]),
                          cuda::pair_bits(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]),
                          cuda::pair_bits(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9])};
  const uint32_t fb[2] = {cuda::pair_bits(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]),
                          cuda::pair_bits(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g])};
  float fc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
  cuda::mma_bf16_16816(fc, fa, fb);
  c[g * 8 + 2 * t] = fc[0];
  c[g * 8 + 2 * t + 1] = fc[1];
  c[(g + 8) * 8 + 2 * t] = fc[2];
  c[(g + 8) * 8 + 2 * t + 1] = fc[3];
}

void launch_mma_tile(const bf16* a, const bf16* b, float* c) { cuda::launch(mma_tile, 1, 32, 0, nullptr, a, b, c); }

// Four 8×8 matrices m [4][8][8] (row-major) staged in shared memory through AsyncCopies, then
// each lane's registers from ldmatrix as it lies and transposed: out[lane][0..3] and [4..7].
// Lane l gives the address of row l % 8 of matrix l / 8. Before the wait, each thread also reads
// back the row it copied: what it sees there goes to early[lane] (bf16 bits).
__global__ void ldmatrix_tile(const bf16* m, uint32_t* out, uint16_t* early) {
  __shared__ __align__(16) bf16 staged[4 * 8 * 8];
  const int lane = static_cast<int>(threadIdx.x % 32);
  cuda::AsyncCopies copies;
  staged[lane * 8] = bf16(0.0f);  // a known value under the copy
  copies.copy16(staged + lane * 8, m + lane * 8, true);
  copies.commit();
  early[lane] = staged[lane * 8].bits;
  copies.wait<0>();
  __syncthreads();
  uint32_t r[4], rt[4];
  cuda::load_matrices_x4(r, staged + lane * 8);
  cuda::load_matrices_x4_transposed(rt, staged + lane * 8);
  for (int i = 0; i < 4; ++i) {
    out[lane * 8 + i] = r[i];
    out[lane * 8 + 4 + i] = rt[i];
  }
}

void launch_ldmatrix_tile(const bf16* m, uint32_t* out, uint16_t* early) {
  cuda::launch(ldmatrix_tile, 1, 32, 0, nullptr, m, out, early);
}

// ldmatrix with lane `lane`'s row address `offset_bytes` past where it should be (0: a correct call).
__global__ void ldmatrix_misaligned(int lane, int offset_bytes, uint32_t* out) {
  __shared__ __align__(16) bf16 staged[4 * 8 * 8 + 8];
  const int me = static_cast<int>(threadIdx.x % 32);
  for (int i = me; i < 4 * 8 * 8 + 8; i += 32) staged[i] = bf16(static_cast<float>(i));
  __syncthreads();
  const auto* row = reinterpret_cast<const unsigned char*>(staged + me * 8) + (me == lane ? offset_bytes : 0);
  uint32_t r[4];
  cuda::load_matrices_x4(r, reinterpret_cast<const bf16*>(row));
  out[me] = r[0];
}

void launch_ldmatrix_misaligned(int lane, int offset_bytes, uint32_t* out) {
  cuda::launch(ldmatrix_misaligned, 1, 32, 0, nullptr, lane, offset_bytes, out);
}

}  // namespace mcdl::emu_selftest
