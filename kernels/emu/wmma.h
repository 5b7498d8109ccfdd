// nvcuda::wmma (CUDA's <mma.h>) for emulator builds: the 16×16×16 shape with bf16 operands and
// an fp32 accumulator, the subset the project's kernels use. Kernels include it through
// kernels/cuda/wmma.h.
//
// load_matrix_sync, store_matrix_sync and mma_sync are warp-collective, as on the GPU: each lane
// posts its arguments and waits; once all 32 lanes of the warp wait at the same call, the
// scheduler runs the operation once for the warp (warp_collective.h). A lane that never arrives is
// reported like a shuffle that can never complete. What CUDA documents as required is checked,
// with the call site in the message: a full warp, a 256-bit (32-byte) aligned pointer, ldm a
// multiple of 16 bytes (8 bf16 or 4 floats), and the same pointer, ldm and layout in every lane.
//
// Each lane holds 8 elements of a fragment in x[], as on sm_80 and sm_90. Which matrix element a
// lane's x[i] is, CUDA leaves unspecified (it differs between architectures). The emulator's
// mapping is a scramble that differs between matrix_a, matrix_b and the accumulator and changes
// with the thread order, so a kernel that assumes any mapping (rescaling an accumulator's rows in
// registers, reusing an accumulator as an operand) fails its parity tests. Element-wise work on
// x[] (scaling every element, or reading elements of a fragment loaded from a known matrix)
// does not depend on it.
//
// mma_sync accumulates in fp32, k in order: products of bf16 values are exact in fp32.
#pragma once
#include <concepts>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <source_location>
#include <string>
#include <type_traits>

#include "error.h"
#include "intrinsics.h"
#include "scheduler.h"
#include "thread_order.h"
#include "warp_collective.h"

// CUDA's bfloat16 as the WMMA functions take it (cuda_bf16.h): the upper 16 bits of an IEEE float.
struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
};

namespace nvcuda::wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;

enum layout_t { mem_row_major, mem_col_major };

template <class T, int size>
struct frag_base {
  enum { num_elements = size, num_storage_elements = size };
  using element_type = T;
  using storage_element_type = T;
  T x[size];
};

// Only the emulated shapes and types are defined; any other fragment is an incomplete type.
template <class Use, int m, int n, int k, class T, class Layout = void>
class fragment;
template <class Use, class Layout>
  requires(std::same_as<Use, matrix_a> || std::same_as<Use, matrix_b>) &&
          (std::same_as<Layout, row_major> || std::same_as<Layout, col_major>)
class fragment<Use, 16, 16, 16, __nv_bfloat16, Layout> : public frag_base<__nv_bfloat16, 8> {};
template <>
class fragment<accumulator, 16, 16, 16, float> : public frag_base<float, 8> {};

template <class Use, int m, int n, int k, class T, class Layout>
void fill_fragment(fragment<Use, m, n, k, T, Layout>& f, const std::type_identity_t<T>& value) {
  for (T& element : f.x) element = value;
}

}  // namespace nvcuda::wmma

namespace mcdl::emu::detail {

using AccumulatorFragment = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;
template <class Use, class Layout>
using OperandFragment = nvcuda::wmma::fragment<Use, 16, 16, 16, __nv_bfloat16, Layout>;

inline constexpr unsigned tile_side = 16, tile_elements = 256, lane_elements = 8;

// The position (row·16 + column) of element i of a lane's fragment: (e·multiplier + offset) mod
// 256 with an odd multiplier is a bijection of the 256 elements. use: 0 matrix_a, 1 matrix_b,
// 2 accumulator.
inline unsigned fragment_position(unsigned use, unsigned lane, unsigned i) {
  static constexpr unsigned multipliers[3][3] = {{37, 101, 173}, {59, 139, 197}, {83, 157, 229}};
  const auto variant = static_cast<unsigned>(thread_order());
  return ((lane * lane_elements + i) * multipliers[use][variant] + 17 * variant + 5 * use) % tile_elements;
}

template <class Use>
constexpr unsigned use_index = std::same_as<Use, nvcuda::wmma::matrix_a> ? 0 : 1;
template <class Layout>
constexpr nvcuda::wmma::layout_t memory_layout =
    std::same_as<Layout, nvcuda::wmma::row_major> ? nvcuda::wmma::mem_row_major : nvcuda::wmma::mem_col_major;

// Where element (row, column) of the tile lies in memory.
inline size_t element_offset(unsigned position, unsigned ldm, nvcuda::wmma::layout_t layout) {
  const unsigned row = position / tile_side, column = position % tile_side;
  return layout == nvcuda::wmma::mem_row_major ? size_t{row} * ldm + column : size_t{column} * ldm + row;
}

inline float widen(float value) { return value; }
inline float widen(__nv_bfloat16 value) { return std::bit_cast<float>(static_cast<uint32_t>(value.__x) << 16); }

// A lane's arguments to a load or a store.
template <class Fragment, class Pointer>
struct MemoryArguments {
  Fragment* fragment;
  Pointer memory;
  unsigned ldm;
  nvcuda::wmma::layout_t layout;
};

// CUDA requires one matrix per warp: the same pointer, ldm and layout in every lane.
template <class Arguments>
void check_same_matrix(void* const* lanes) {
  const Arguments& first = lane_arguments<Arguments>(lanes, 0);
  for (unsigned lane = 1; lane < warp_lanes; ++lane) {
    const Arguments& other = lane_arguments<Arguments>(lanes, lane);
    if (other.memory != first.memory || other.ldm != first.ldm || other.layout != first.layout)
      throw EmulationError("lane " + std::to_string(lane) +
                           " passed another pointer, ldm or layout than lane 0: every lane of the warp must name "
                           "the same matrix");
  }
}

template <class Fragment, class T>
void load_tile(void* const* lanes, unsigned use) {
  using Arguments = MemoryArguments<Fragment, const T*>;
  check_same_matrix<Arguments>(lanes);
  for (unsigned lane = 0; lane < warp_lanes; ++lane) {
    const Arguments& a = lane_arguments<Arguments>(lanes, lane);
    for (unsigned i = 0; i < lane_elements; ++i)
      std::memcpy(&a.fragment->x[i], a.memory + element_offset(fragment_position(use, lane, i), a.ldm, a.layout),
                  sizeof(T));
  }
}

inline void store_tile(void* const* lanes) {
  using Arguments = MemoryArguments<const AccumulatorFragment, float*>;
  check_same_matrix<Arguments>(lanes);
  for (unsigned lane = 0; lane < warp_lanes; ++lane) {
    const Arguments& a = lane_arguments<Arguments>(lanes, lane);
    for (unsigned i = 0; i < lane_elements; ++i)
      std::memcpy(a.memory + element_offset(fragment_position(2, lane, i), a.ldm, a.layout), &a.fragment->x[i],
                  sizeof(float));
  }
}

// The warp's tile held by the lanes' fragments (`Arguments::*member` of each lane's arguments),
// as floats in row-major order.
template <class Arguments, class Fragment>
void gather(void* const* lanes, const Fragment* Arguments::*member, unsigned use, float* tile) {
  for (unsigned lane = 0; lane < warp_lanes; ++lane) {
    const Fragment& f = *(lane_arguments<Arguments>(lanes, lane).*member);
    for (unsigned i = 0; i < lane_elements; ++i) tile[fragment_position(use, lane, i)] = widen(f.x[i]);
  }
}

template <class LayoutA, class LayoutB>
struct MmaArguments {
  AccumulatorFragment* d;
  const OperandFragment<nvcuda::wmma::matrix_a, LayoutA>* a;
  const OperandFragment<nvcuda::wmma::matrix_b, LayoutB>* b;
  const AccumulatorFragment* c;
};

// D = A·B + C for the warp; d may be c.
template <class LayoutA, class LayoutB>
void multiply_tiles(void* const* lanes) {
  using Arguments = MmaArguments<LayoutA, LayoutB>;
  float a[tile_elements], b[tile_elements], c[tile_elements];
  gather(lanes, &Arguments::a, 0, a);
  gather(lanes, &Arguments::b, 1, b);
  gather(lanes, &Arguments::c, 2, c);
  for (unsigned row = 0; row < tile_side; ++row)
    for (unsigned column = 0; column < tile_side; ++column) {
      float sum = c[row * tile_side + column];
      for (unsigned k = 0; k < tile_side; ++k) sum += a[row * tile_side + k] * b[k * tile_side + column];
      c[row * tile_side + column] = sum;
    }
  for (unsigned lane = 0; lane < warp_lanes; ++lane) {
    AccumulatorFragment& d = *lane_arguments<Arguments>(lanes, lane).d;
    for (unsigned i = 0; i < lane_elements; ++i) d.x[i] = c[fragment_position(2, lane, i)];
  }
}

inline void check_matrix(const char* name, const void* memory, unsigned ldm, unsigned element_bytes,
                         const std::source_location& where) {
  const auto fail = [&](const std::string& problem) {
    throw EmulationError(std::string(name) + " (" + to_string(where) + "): " + problem);
  };
  if (const auto address = reinterpret_cast<uintptr_t>(memory); address % 32 != 0) {
    char text[40];
    std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(address));
    fail(std::string("the pointer ") + text + " is not 256-bit (32-byte) aligned");
  }
  if (ldm * element_bytes % 16 != 0)
    fail("ldm " + std::to_string(ldm) + " is not a multiple of " + std::to_string(16 / element_bytes) +
         " elements (16 bytes)");
}

}  // namespace mcdl::emu::detail

namespace nvcuda::wmma {

template <class Use, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, __nv_bfloat16, Layout>& f, const __nv_bfloat16* p, unsigned ldm,
                      std::source_location where = std::source_location::current()) {
  using namespace mcdl::emu::detail;
  using Fragment = fragment<Use, 16, 16, 16, __nv_bfloat16, Layout>;
  check_matrix("wmma::load_matrix_sync", p, ldm, sizeof(__nv_bfloat16), where);
  const MemoryArguments<Fragment, const __nv_bfloat16*> arguments{&f, p, ldm, memory_layout<Layout>};
  warp_collective([](void* const* lanes) { load_tile<Fragment, __nv_bfloat16>(lanes, use_index<Use>); }, arguments,
                  "wmma::load_matrix_sync", where);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm,
                             layout_t layout, std::source_location where = std::source_location::current()) {
  using namespace mcdl::emu::detail;
  check_matrix("wmma::load_matrix_sync", p, ldm, sizeof(float), where);
  const MemoryArguments<AccumulatorFragment, const float*> arguments{&f, p, ldm, layout};
  warp_collective([](void* const* lanes) { load_tile<AccumulatorFragment, float>(lanes, 2); }, arguments,
                  "wmma::load_matrix_sync", where);
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm,
                              layout_t layout, std::source_location where = std::source_location::current()) {
  using namespace mcdl::emu::detail;
  check_matrix("wmma::store_matrix_sync", p, ldm, sizeof(float), where);
  const MemoryArguments<const AccumulatorFragment, float*> arguments{&f, p, ldm, layout};
  warp_collective(&store_tile, arguments, "wmma::store_matrix_sync", where);
}

template <class LayoutA, class LayoutB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LayoutA>& a,
              const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LayoutB>& b,
              const fragment<accumulator, 16, 16, 16, float>& c,
              std::source_location where = std::source_location::current()) {
  using namespace mcdl::emu::detail;
  const MmaArguments<LayoutA, LayoutB> arguments{&d, &a, &b, &c};
  warp_collective(&multiply_tiles<LayoutA, LayoutB>, arguments, "wmma::mma_sync", where);
}

}  // namespace nvcuda::wmma
