// __syncthreads, the warp shuffles, votes and __syncwarp for emulator builds. Each call suspends
// the calling emulated thread until the scheduler (scheduler.h) releases its block or warp group.
// The trailing source_location parameters are filled in at the call site and only serve the
// diagnostics; kernels call these exactly as in CUDA.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <string>
#include <type_traits>

#include "error.h"
#include "scheduler.h"

inline constexpr int warpSize = 32;

namespace mcdl::emu::detail {

inline int block_barrier(BarrierResult result, int predicate, const char* name, const std::source_location& where) {
  WaitOp op;
  op.kind = WaitKind::block_barrier;
  op.variant = static_cast<uint8_t>(result);
  op.operand = predicate != 0;
  op.name = name;
  op.where = where;
  return static_cast<int>(Scheduler::instance().wait(op));
}

// A warp operation's common part. CUDA leaves a call from a lane outside `mask` undefined; the
// emulator reports it.
inline WaitOp warp_op(WaitKind kind, unsigned mask, const char* name, const std::source_location& where) {
  if (const ThreadState* thread = current_thread) {
    const unsigned lane = thread->linear % warp_lanes;
    if ((mask >> lane & 1u) == 0)
      throw EmulationError(std::string(name) + " (" + to_string(where) + "): the calling lane " + std::to_string(lane) +
                           " is not in the mask " + hex(mask));
  }
  WaitOp op;
  op.kind = kind;
  op.mask = mask;
  op.name = name;
  op.where = where;
  return op;
}

// The ballot of `predicate` over the lanes taking part; `mode` only keeps different votes apart.
inline unsigned ballot(VoteMode mode, unsigned mask, int predicate, const char* name,
                       const std::source_location& where) {
  WaitOp op = warp_op(WaitKind::vote, mask, name, where);
  op.variant = static_cast<uint8_t>(mode);
  op.operand = predicate != 0;
  return static_cast<unsigned>(Scheduler::instance().wait(op));
}

template <class T>
T shuffle(ShuffleMode mode, unsigned mask, T value, unsigned operand, int width, const char* name,
          const std::source_location& where) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffled values are at most 8 bytes");
  if (width < 1 || width > warpSize || !std::has_single_bit(static_cast<unsigned>(width)))
    throw EmulationError(std::string(name) + " (" + to_string(where) + "): width " + std::to_string(width) +
                         " is not a power of two from 1 to 32");
  WaitOp op = warp_op(WaitKind::shuffle, mask, name, where);
  op.variant = static_cast<uint8_t>(mode);
  op.width = static_cast<unsigned>(width);
  op.value_bytes = sizeof(T);
  op.operand = operand;
  std::memcpy(&op.value, &value, sizeof(T));
  const uint64_t bits = Scheduler::instance().wait(op);
  T result;
  std::memcpy(&result, &bits, sizeof(T));
  return result;
}

}  // namespace mcdl::emu::detail

inline void __syncthreads(std::source_location where = std::source_location::current()) {
  mcdl::emu::detail::block_barrier(mcdl::emu::detail::BarrierResult::none, 0, "__syncthreads", where);
}
inline int __syncthreads_count(int predicate, std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::block_barrier(mcdl::emu::detail::BarrierResult::count, predicate, "__syncthreads_count",
                                          where);
}
inline int __syncthreads_and(int predicate, std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::block_barrier(mcdl::emu::detail::BarrierResult::all, predicate, "__syncthreads_and", where);
}
inline int __syncthreads_or(int predicate, std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::block_barrier(mcdl::emu::detail::BarrierResult::any, predicate, "__syncthreads_or", where);
}

inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location where = std::source_location::current()) {
  using namespace mcdl::emu::detail;
  Scheduler::instance().wait(warp_op(WaitKind::warp_sync, mask, "__syncwarp", where));
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::ballot(mcdl::emu::detail::VoteMode::ballot, mask, predicate, "__ballot_sync", where);
}
inline int __any_sync(unsigned mask, int predicate, std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::ballot(mcdl::emu::detail::VoteMode::any, mask, predicate, "__any_sync", where) != 0;
}
// True when no taking-part lane has a false predicate.
inline int __all_sync(unsigned mask, int predicate, std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::ballot(mcdl::emu::detail::VoteMode::all, mask, !predicate, "__all_sync", where) == 0;
}

template <class T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
              std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::shuffle(mcdl::emu::detail::ShuffleMode::idx, mask, var, static_cast<unsigned>(srcLane),
                                    width, "__shfl_sync", where);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::shuffle(mcdl::emu::detail::ShuffleMode::up, mask, var, delta, width, "__shfl_up_sync",
                                    where);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::shuffle(mcdl::emu::detail::ShuffleMode::down, mask, var, delta, width, "__shfl_down_sync",
                                    where);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                  std::source_location where = std::source_location::current()) {
  return mcdl::emu::detail::shuffle(mcdl::emu::detail::ShuffleMode::bfly, mask, var, static_cast<unsigned>(laneMask),
                                    width, "__shfl_xor_sync", where);
}
