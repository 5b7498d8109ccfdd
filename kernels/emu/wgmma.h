// Hopper's warpgroup matrix product (wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16, A from
// registers, B from shared memory through a matrix descriptor) with its fence, commit_group and
// wait_group, for emulator builds; kernels/cuda/wgmma.h wraps them for kernel sources.
//
// A warpgroup's product D [64×64] (+)= A [64×16]·B [16×64] splits by warps: warp w of the group
// holds rows 16w to 16w + 15 of A and D, in the register layout of mma.m16n8k16 (A) and of eight
// of its 16×8 accumulators side by side (D), so each warp's rows need only its own A registers and
// the shared B. The issue is one warp collective (warp_collective.h): it copies the warp's A
// registers, as the hardware captures them at the issue, and queues the product with each lane.
// Each lane then computes its own accumulators when it waits for the product's group: the latest
// moment the hardware may, so that a kernel that reads accumulators or rewrites B before its wait
// gets the emulator's stale or new values, and its parity test fails. A product issued by a thread
// that has not fenced its shared-memory writes for the async proxy, or without a wgmma.fence since
// its last wait, is refused. Not checked: that all four warps of the warpgroup issue each product
// (the instruction is .aligned over the warpgroup; each warp's rows are computed on their own here).
//
// The B descriptor (the PTX ISA's "matrix descriptor"): bits 0-13 the start address, 16-29 the
// leading-dimension byte offset, 32-45 the stride-dimension byte offset, each in 16-byte units;
// 49-51 the base offset; 62-63 the swizzle mode. Only the layout without swizzle is emulated: 8×8
// "core matrices" of 128 contiguous bytes, 16 bytes a row; the leading offset steps between core
// matrices along K, the stride offset along N. K-major B (the default) has K along a core row;
// MN-major B (transposed) has N along it.
#pragma once
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>

#include "commit_groups.h"
#include "error.h"
#include "mma.h"
#include "warp_collective.h"

namespace mcdl::emu {

// cvta.to.shared: the address of `p` in the block's shared window, which the emulator counts from
// the start of the launch's dynamic shared memory.
inline uint32_t shared_window_address(const void* p, std::source_location where = std::source_location::current()) {
  const auto* byte = static_cast<const unsigned char*>(p);
  const detail::Builtins& b = detail::builtins;
  if (b.dynamic_shared == nullptr || byte < b.dynamic_shared || byte >= b.dynamic_shared + b.dynamic_shared_bytes)
    throw EmulationError("shared_window_address (" + detail::to_string(where) +
                         "): the address is not in the launch's dynamic shared memory");
  return static_cast<uint32_t>(byte - b.dynamic_shared);
}

namespace detail {

// One warp's part of one warpgroup product: its 16 rows.
struct WarpProduct {
  float a[16][16];       // the warp's rows of A, from its lanes' registers at the issue
  float* d[warp_lanes];  // every lane's 32 accumulators
  uint64_t b;
  bool accumulate, transpose_b;
  // B, read from shared memory when the warp's first lane waits for the product (a kernel that
  // changed B between two lanes' waits would race on the GPU, where the warpgroup reads it once).
  mutable bool b_read = false;
  mutable float b_values[16][64];
};

class WarpgroupQueue;

struct WgmmaLane {
  WarpgroupQueue* queue;
  float* d;
  const uint32_t* a;
  uint64_t b;
  bool accumulate, transpose_b;
};

// B [k][n] (bf16) through the descriptor, with the bounds of the launch's dynamic shared memory.
inline float descriptor_element(uint64_t descriptor, bool transpose_b, unsigned k, unsigned n) {
  const uint64_t start = (descriptor & 0x3fff) << 4, leading = (descriptor >> 16 & 0x3fff) << 4,
                 stride = (descriptor >> 32 & 0x3fff) << 4;
  const uint64_t inner = transpose_b ? (k % 8) * 16 + (n % 8) * 2 : (n % 8) * 16 + (k % 8) * 2;
  const uint64_t offset = start + (k / 8) * leading + (n / 8) * stride + inner;
  if (offset + 2 > builtins.dynamic_shared_bytes)
    throw EmulationError("wgmma: the B descriptor reaches byte " + std::to_string(offset) + " of shared memory, past the " +
                         std::to_string(builtins.dynamic_shared_bytes) + " the launch has");
  return bf16_bits_to_float(element16(builtins.dynamic_shared + offset, 0));
}

// A lane's 32 accumulators of `product`, computed when it waits: row g (+8), columns 8i + 2t (+1).
inline void run_lane(const WarpProduct& product, unsigned lane) {
  float* d = product.d[lane];
  const unsigned g = lane / 4, t = lane % 4;
  auto& b = product.b_values;
  if (!product.b_read) {
    for (unsigned k = 0; k < 16; ++k)
      for (unsigned n = 0; n < 64; ++n) b[k][n] = descriptor_element(product.b, product.transpose_b, k, n);
    product.b_read = true;
  }
  for (unsigned i = 0; i < 32; ++i) {
    const unsigned row = g + 8 * (i % 4 / 2), column = 8 * (i / 4) + 2 * t + i % 2;
    float sum = product.accumulate ? d[i] : 0.0f;
    for (unsigned k = 0; k < 16; ++k) sum += product.a[row][k] * b[k][column];
    d[i] = sum;
  }
}

// Per emulated thread: the products it issued, in groups, until it waits for them.
class WarpgroupQueue {
 public:
  void fence() { fenced_ = true; }
  void publish_shared_writes() { published_ = true; }

  void issue(float (&d)[32], const uint32_t (&a)[4], uint64_t b, bool accumulate, bool transpose_b,
             const std::source_location& where) {
    if (!published_)
      throw EmulationError("wgmma.mma_async (" + to_string(where) +
                           "): this thread never called fence.proxy.async (publish_shared_writes); the product "
                           "reads shared memory through the async proxy, which may not see its earlier stores");
    if (!fenced_)
      throw EmulationError("wgmma.mma_async (" + to_string(where) +
                           "): no wgmma.fence since the warpgroup last waited; the registers it reads may not be ready");
    const WgmmaLane arguments{this, d, a, b, accumulate, transpose_b};
    warp_collective(&gather, arguments, "wgmma.mma_async", where);
  }

  void commit() { issued_.commit(); }

  // Runs this lane's part of every committed group but the newest `pending`.
  void wait(unsigned pending) {
    fenced_ = false;
    issued_.wait(pending, [this](const std::shared_ptr<const WarpProduct>& product) { run_lane(*product, lane_); });
  }

 private:
  // Once per warp: checks that the lanes issue the same product, copies their A registers, and
  // queues the warp's product with every lane.
  static void gather(void* const* lanes) {
    const WgmmaLane& first = lane_arguments<WgmmaLane>(lanes, 0);
    auto product = std::make_shared<WarpProduct>();
    product->b = first.b;
    product->accumulate = first.accumulate;
    product->transpose_b = first.transpose_b;
    if (first.b >> 62 != 0 || (first.b >> 49 & 7) != 0)
      throw EmulationError("the B descriptor asks for a swizzled layout or a base offset; only the layout without "
                           "swizzle is emulated");
    for (unsigned lane = 0; lane < warp_lanes; ++lane) {
      const WgmmaLane& l = lane_arguments<WgmmaLane>(lanes, lane);
      if (l.b != first.b || l.accumulate != first.accumulate || l.transpose_b != first.transpose_b)
        throw EmulationError("lane " + std::to_string(lane) +
                             " gives another descriptor or scale than lane 0; the instruction is .aligned");
      product->d[lane] = l.d;
    }
    unpack_a_fragments(product->a, [lanes](unsigned lane) { return lane_arguments<WgmmaLane>(lanes, lane).a; });
    for (unsigned lane = 0; lane < warp_lanes; ++lane) {
      WarpgroupQueue& queue = *lane_arguments<WgmmaLane>(lanes, lane).queue;
      queue.lane_ = lane;
      queue.issued_.push(product);
    }
  }

  CommitGroups<std::shared_ptr<const WarpProduct>> issued_;
  unsigned lane_ = 0;
  bool fenced_ = false, published_ = false;
};

}  // namespace detail
}  // namespace mcdl::emu
