// The PTX ISA's warp-level matrix instructions that kernels/cuda/mma.h wraps, for emulator
// builds: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 and ldmatrix.sync.aligned.m8n8.x4
// (.b16, as the matrices lie and .trans). Each is one warp collective (warp_collective.h): the
// warp's lanes meet once per instruction, and the operation then reads every lane's registers or
// row addresses, as the instruction does on the GPU.
//
// The register layouts are the PTX ISA's, as kernels/cuda/mma.h writes them out. The product adds
// to each c in fp32, k in order (a product of two bf16 values is exact in fp32); ldmatrix checks
// that every lane's row address is 16-byte aligned, as the instruction requires.
#pragma once
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <source_location>
#include <string>

#include "error.h"
#include "warp_collective.h"

namespace mcdl::emu {
namespace detail {

inline float bf16_bits_to_float(uint32_t bits16) { return std::bit_cast<float>(bits16 << 16); }

struct MmaLane {
  float* c;
  const uint32_t* a;
  const uint32_t* b;
};

// A [16×16] from the warp's A fragments, lane by lane (registers(lane) gives its four): with
// g = lane / 4 and t = lane % 4, register r holds A[g + 8(r % 2)][2t + 8(r / 2)] and the next column.
// mma.sync's A operand, and each warp's 16 rows of wgmma's A from registers (wgmma.h).
template <class LaneRegisters>
void unpack_a_fragments(float (&a)[16][16], LaneRegisters registers) {
  for (unsigned lane = 0; lane < warp_lanes; ++lane) {
    const uint32_t* r = registers(lane);
    const unsigned g = lane / 4, t = lane % 4;
    for (unsigned reg = 0; reg < 4; ++reg) {
      const unsigned row = g + 8 * (reg % 2), k = 2 * t + 8 * (reg / 2);
      a[row][k] = bf16_bits_to_float(r[reg] & 0xffffu);
      a[row][k + 1] = bf16_bits_to_float(r[reg] >> 16);
    }
  }
}

inline void multiply_m16n8k16(void* const* lanes) {
  float a[16][16], b[16][8];
  unpack_a_fragments(a, [lanes](unsigned lane) { return lane_arguments<MmaLane>(lanes, lane).a; });
  for (unsigned lane = 0; lane < warp_lanes; ++lane) {
    const MmaLane& l = lane_arguments<MmaLane>(lanes, lane);
    const unsigned g = lane / 4, t = lane % 4;
    for (unsigned reg = 0; reg < 2; ++reg) {
      const unsigned k = 2 * t + 8 * reg;
      b[k][g] = bf16_bits_to_float(l.b[reg] & 0xffffu);
      b[k + 1][g] = bf16_bits_to_float(l.b[reg] >> 16);
    }
  }
  for (unsigned lane = 0; lane < warp_lanes; ++lane) {
    float* c = lane_arguments<MmaLane>(lanes, lane).c;
    const unsigned g = lane / 4, t = lane % 4;
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned row = g + 8 * (i / 2), column = 2 * t + i % 2;
      for (unsigned k = 0; k < 16; ++k) c[i] += a[row][k] * b[k][column];
    }
  }
}

struct LoadMatricesLane {
  uint32_t* r;
  const unsigned char* row;
};

inline uint32_t element16(const unsigned char* row, unsigned index) {
  uint16_t value;
  std::memcpy(&value, row + 2 * index, sizeof value);
  return value;
}

template <bool transposed>
void load_matrices_x4(void* const* lanes) {
  for (unsigned lane = 0; lane < warp_lanes; ++lane)
    if (const auto address = reinterpret_cast<uintptr_t>(lane_arguments<LoadMatricesLane>(lanes, lane).row);
        address % 16 != 0) {
      char text[40];
      std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(address));
      throw EmulationError("lane " + std::to_string(lane) + "'s row address " + text +
                           " is not 16-byte aligned, as ldmatrix requires");
    }
  const auto row = [lanes](unsigned lane) { return lane_arguments<LoadMatricesLane>(lanes, lane).row; };
  for (unsigned lane = 0; lane < warp_lanes; ++lane) {
    uint32_t* r = lane_arguments<LoadMatricesLane>(lanes, lane).r;
    const unsigned g = lane / 4, t = lane % 4;
    for (unsigned i = 0; i < 4; ++i)
      r[i] = transposed ? element16(row(8 * i + 2 * t), g) | element16(row(8 * i + 2 * t + 1), g) << 16
                        : element16(row(8 * i + g), 2 * t) | element16(row(8 * i + g), 2 * t + 1) << 16;
  }
}

}  // namespace detail

// c += A·B for one warp (mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32).
inline void mma_m16n8k16_bf16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                              std::source_location where = std::source_location::current()) {
  const detail::MmaLane arguments{c, a, b};
  detail::warp_collective(&detail::multiply_m16n8k16, arguments, "mma.sync.m16n8k16", where);
}

// ldmatrix.sync.aligned.m8n8.x4.shared.b16, with .trans when `transposed`.
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transposed,
                        std::source_location where = std::source_location::current()) {
  const detail::LoadMatricesLane arguments{r, static_cast<const unsigned char*>(row)};
  if (transposed)
    detail::warp_collective(&detail::load_matrices_x4<true>, arguments, "ldmatrix.x4.trans", where);
  else
    detail::warp_collective(&detail::load_matrices_x4<false>, arguments, "ldmatrix.x4", where);
}

}  // namespace mcdl::emu
