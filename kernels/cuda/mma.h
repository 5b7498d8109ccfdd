// One warp's tensor-core product in the register layout the PTX ISA documents (section "Matrix
// Fragments for mma.m16n8k16 with floating point type"), for kernel sources. Unlike WMMA's
// fragments, whose layout CUDA leaves unspecified (and the emulator scrambles), a kernel may rely
// on this one: rescale an accumulator's rows in registers, or turn accumulators into the next
// product's A operand.
#pragma once
#include <cstdint>

#include "kernels/bf16.h"
#include "kernels/cuda/cuda_common.h"

#ifndef __CUDACC__
#include "kernels/emu/mma.h"
#endif

namespace mcdl::cuda {

// Two bf16 in one 32-bit register, `low` in the low half (the lower row or column of a pair).
__device__ __forceinline__ uint32_t pack_bf16x2(float low, float high) {
  return static_cast<uint32_t>(bf16(low).bits) | (static_cast<uint32_t>(bf16(high).bits) << 16);
}
// Two bf16 values' bits in one register, `low` in the low half, unrounded.
__device__ __forceinline__ uint32_t pair_bits(bf16 low, bf16 high) {
  return static_cast<uint32_t>(low.bits) | (static_cast<uint32_t>(high.bits) << 16);
}

// c += A·B for A 16×16 and B 16×8 (bf16), c 16×8 (fp32). With g = lane / 4 and t = lane % 4:
//   a[0] = A[g][2t, 2t+1]      a[1] = A[g+8][2t, 2t+1]    a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
//   b[0] = B[2t, 2t+1][g]      b[1] = B[2t+8, 2t+9][g]
//   c[0], c[1] = C[g][2t, 2t+1]                            c[2], c[3] = C[g+8][2t, 2t+1]
// On the GPU the mma.sync instruction (sm_80 and newer); in the emulator one warp collective that
// adds the products to c in fp32, k in order (kernels/emu/mma.h).
__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif !defined(__CUDACC__)
  emu::mma_m16n8k16_bf16(c, a, b);
#endif
}

// c0 += A·B0 and c1 += A·B1 for the two B operands one ldmatrix below loads: b[0], b[1] and b[2], b[3].
__device__ __forceinline__ void mma_bf16_16816_pair(float (&c0)[4], float (&c1)[4], const uint32_t (&a)[4],
                                                    const uint32_t (&b)[4]) {
  const uint32_t first[2] = {b[0], b[1]}, second[2] = {b[2], b[3]};
  mma_bf16_16816(c0, a, first);
  mma_bf16_16816(c1, a, second);
}

// ldmatrix: four 8×8 bf16 matrices from shared memory into registers, in the fragment layout of
// the product above. Lanes 8i to 8i + 7 give the addresses of matrix i's rows 0 to 7 (16 bytes
// each, 16-byte aligned); with g = lane / 4 and t = lane % 4, lane gets in r[i]
//   load_matrices_x4:            M_i[g][2t, 2t+1]      (a B operand whose columns are M's rows)
//   load_matrices_x4_transposed: M_i[2t, 2t+1][g]      (a B operand stored row by row)
// On the GPU the ldmatrix instruction (sm_75 and newer); in the emulator one warp collective that
// reads through every lane's row address (kernels/emu/mma.h), checking their 16-byte alignment.
__device__ __forceinline__ void load_matrices_x4(uint32_t (&r)[4], const bf16* row) {
#if defined(__CUDA_ARCH__)
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#elif !defined(__CUDACC__)
  emu::ldmatrix_x4(r, row, false);
#endif
}
__device__ __forceinline__ void load_matrices_x4_transposed(uint32_t (&r)[4], const bf16* row) {
#if defined(__CUDA_ARCH__)
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#elif !defined(__CUDACC__)
  emu::ldmatrix_x4(r, row, true);
#endif
}

}  // namespace mcdl::cuda
