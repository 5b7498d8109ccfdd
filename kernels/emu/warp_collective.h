// Warp-collective operations for emulator builds (the WMMA calls of wmma.h, the mma.sync and
// ldmatrix instructions of mma.h): each lane posts the address of its arguments and waits; once
// all 32 lanes of the warp wait at the same call site, the scheduler runs the operation once, on
// every lane's arguments (scheduler.h). One meeting point per instruction, as on the GPU, where an
// emulation by shuffles would need one per value exchanged.
#pragma once
#include <cstdint>
#include <source_location>
#include <string>

#include "error.h"
#include "intrinsics.h"
#include "scheduler.h"

namespace mcdl::emu::detail {

template <class Arguments>
const Arguments& lane_arguments(void* const* lanes, unsigned lane) {
  return *static_cast<const Arguments*>(lanes[lane]);
}

// Checks what one lane can check, then waits until the warp's other lanes arrive and the
// scheduler has run `operation` on all of them.
template <class Arguments>
void warp_collective(void (*operation)(void* const*), const Arguments& arguments, const char* name,
                     const std::source_location& where) {
  if (const ThreadState* thread = current_thread) {
    const dim3& block = builtins.block_dim;
    const unsigned threads = block.x * block.y * block.z, first = thread->linear / warp_lanes * warp_lanes;
    if (threads - first < warp_lanes)
      throw EmulationError(std::string(name) + " (" + to_string(where) + "): a warp-collective operation needs all " +
                           "32 lanes, but this warp of the block has " + std::to_string(threads - first));
  }
  WaitOp op = warp_op(WaitKind::collective, ~0u, name, where);
  op.collective = operation;
  op.value = reinterpret_cast<uintptr_t>(&arguments);
  Scheduler::instance().wait(op);
}

}  // namespace mcdl::emu::detail
