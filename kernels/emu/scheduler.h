// The CUDA emulator's scheduler: runs a launch block after block on the calling thread, each CUDA
// thread of a block on a fiber, with __syncthreads and the warp operations as meeting points
// between fibers.
//
// Rounds. Round 0 starts every thread of the block in the selected thread order; a thread runs
// until it exits or reaches a barrier or warp operation. Each later round resumes, again in the
// selected order (a fresh shuffle per round), the threads released since. Threads are started by
// "runner" fibers that run one thread after another on the same stack: a thread that suspends
// keeps the runner's fiber and a fresh runner starts the next thread. A barrier-free kernel thus
// costs one fiber switch per block, and only threads that actually wait own a fiber.
//
// Meeting points. __syncthreads releases the block once every thread waits at the same call
// (same source location and kind); an exited thread never arrives, so a barrier behind an early
// return is reported, not skipped. A warp operation releases the lanes of its mask that exist in
// the block (a partial last warp has fewer) once all of them wait at a warp operation of the same
// kind, mask, width and value size. Results (shuffled values, ballots) are computed at release
// from the values each lane posted, so back-to-back shuffles cannot overwrite each other's slots.
// A warp collective (the WMMA operations, wmma.h) also needs every lane at the same call site; at
// release the scheduler runs its operation once, on the arguments every lane posted.
// When no thread can run and some have not exited, the block can never finish: the scheduler
// throws EmulationError listing every thread's state.
#pragma once
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <source_location>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "error.h"
#include "fiber.h"
#include "shared_opt_in.h"
#include "stream_capture.h"
#include "symbols.h"
#include "thread_order.h"
#include "vector_types.h"

namespace mcdl::emu::detail {

inline constexpr unsigned warp_lanes = 32;

enum class WaitKind : uint8_t { block_barrier, shuffle, vote, warp_sync, collective };
enum class ShuffleMode : uint8_t { idx, up, down, bfly };
enum class VoteMode : uint8_t { ballot, any, all };
enum class BarrierResult : uint8_t { none, count, all, any };  // __syncthreads, _count, _and, _or
enum class Status : uint8_t { not_started, running, runnable, at_block_barrier, at_warp_op, exited };

// What a suspended thread waits at, with the value it contributes.
struct WaitOp {
  WaitKind kind = WaitKind::block_barrier;
  uint8_t variant = 0;       // ShuffleMode, VoteMode or BarrierResult
  unsigned mask = 0;         // warp operations: the lanes that take part
  unsigned width = 0;        // shuffles
  unsigned value_bytes = 0;  // shuffles: sizeof the value
  unsigned operand = 0;      // shuffles: source lane, delta or lane mask; votes and barriers: predicate
  uint64_t value = 0;        // shuffles: the lane's value; collectives: the address of its arguments
  // Collectives: the operation, run once at release on the 32 lanes' arguments (by lane).
  void (*collective)(void* const* lane_arguments) = nullptr;
  const char* name = "";     // the intrinsic, for messages
  std::source_location where;
};

struct ThreadState {
  uint3 index{};
  unsigned linear = 0;
  Status status = Status::not_started;
  Fiber* fiber = nullptr;
  WaitOp op;
  uint64_t result = 0;
  std::exception_ptr error;
};

// The CUDA built-in variables of the running emulated thread (threadIdx etc. in cuda_emu.h).
struct Builtins {
  uint3 thread_idx{};
  uint3 block_idx{};
  dim3 block_dim;
  dim3 grid_dim;
  unsigned char* dynamic_shared = nullptr;
  size_t dynamic_shared_bytes = 0;
};
inline thread_local Builtins builtins;
inline thread_local ThreadState* current_thread = nullptr;

struct KernelLaunch {
  uintptr_t kernel_address;
  void (*invoke)(const void* call);  // runs the kernel body once, for the current thread
  const void* call;
  dim3 grid, block;
  size_t shared_bytes;
};

inline std::string to_string(const std::source_location& where) {
  return std::string(where.file_name()) + ":" + std::to_string(where.line());
}
inline std::string to_string(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}
inline std::string hex(unsigned value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%08x", value);
  return buffer;
}

class Scheduler {
 public:
  static Scheduler& instance() {
    static Scheduler scheduler;
    return scheduler;
  }

  void run(const KernelLaunch& launch) {
    if (current_thread != nullptr)
      throw EmulationError("mcdl::emu: a kernel launched a kernel; dynamic parallelism is not emulated");
    validate(launch);
    // Static shared variables are ordinary statics, so launches from several host threads take turns.
    std::lock_guard lock(mutex_);
    const std::vector<MemoryRegion>& static_shared = static_shared_variables();
    launch_ = &launch;
    pool_.reclaim_all();
    dynamic_shared_.resize((launch.shared_bytes + sizeof(SharedChunk) - 1) / sizeof(SharedChunk));
    builtins.block_dim = launch.block;
    builtins.grid_dim = launch.grid;
    builtins.dynamic_shared = dynamic_shared_.empty() ? nullptr : dynamic_shared_.front().bytes;
    builtins.dynamic_shared_bytes = launch.shared_bytes;
    n_ = launch.block.x * launch.block.y * launch.block.z;
    threads_.resize(n_);
    const unsigned long long blocks = 1ull * launch.grid.x * launch.grid.y * launch.grid.z;
    const ThreadOrder order = thread_order();
    try {
      if (order == ThreadOrder::shuffled) {
        std::vector<unsigned long long> ids(blocks);
        std::iota(ids.begin(), ids.end(), 0ull);
        arrange(ids, ~0ull);
        for (unsigned long long id : ids) run_block(id, static_shared);
      } else {
        for (unsigned long long i = 0; i < blocks; ++i)
          run_block(order == ThreadOrder::reverse ? blocks - 1 - i : i, static_shared);
      }
    } catch (...) {
      unwind_suspended_threads();
      throw;
    }
  }

  // Called on a thread's fiber: suspends it at `op` until the scheduler releases it, and returns
  // the operation's result.
  uint64_t wait(const WaitOp& op) {
    ThreadState* thread = current_thread;
    if (thread == nullptr)
      throw EmulationError(std::string("mcdl::emu: ") + op.name + " called outside a kernel (" + to_string(op.where) +
                           ")");
    thread->op = op;
    thread->status = op.kind == WaitKind::block_barrier ? Status::at_block_barrier : Status::at_warp_op;
    Fiber* fiber = thread->fiber;
    StackSwitch::begin(&fiber->fake_stack, scheduler_stack_bottom_, scheduler_stack_size_);
    switch_stack(&fiber->stack_pointer, scheduler_stack_pointer_);
    StackSwitch::end(fiber->fake_stack, &scheduler_stack_bottom_, &scheduler_stack_size_);
    if (unwinding_) throw Unwinding{};
    return thread->result;
  }

 private:
  struct alignas(128) SharedChunk {
    unsigned char bytes[128];
  };
  // Thrown into a thread still suspended when its launch failed, to unwind its stack.
  struct Unwinding {};

  // After a failed launch: resumes every thread of the block still suspended at a barrier or warp
  // operation with an Unwinding exception, so that the objects on its stack are destroyed (the
  // queues of deferred cp.async and wgmma work own heap memory) instead of abandoned with it.
  void unwind_suspended_threads() {
    unwinding_ = true;
    for (ThreadState& thread : threads_) {
      const bool suspended = thread.status == Status::at_block_barrier || thread.status == Status::at_warp_op ||
                             thread.status == Status::runnable;
      if (!suspended || thread.fiber == nullptr || thread.fiber->thread != &thread || thread.fiber->finished) continue;
      thread.status = Status::running;
      builtins.thread_idx = thread.index;
      current_thread = &thread;
      switch_to(thread.fiber);
    }
    unwinding_ = false;
  }

  static void validate(const KernelLaunch& launch) {
    const dim3 b = launch.block, g = launch.grid;
    if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 || 1ull * b.x * b.y * b.z > 1024)
      throw EmulationError("mcdl::emu: invalid block " + to_string(b) +
                           ": each dimension at least 1, x and y at most 1024, z at most 64, at most 1024 threads");
    if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 2147483647u || g.y > 65535 || g.z > 65535)
      throw EmulationError("mcdl::emu: invalid grid " + to_string(g) +
                           ": each dimension at least 1, x below 2^31, y and z at most 65535");
    if (launch.shared_bytes > max_dynamic_shared_bytes)
      throw EmulationError("mcdl::emu: " + std::to_string(launch.shared_bytes) +
                           " bytes of dynamic shared memory exceed the " + std::to_string(max_dynamic_shared_bytes) +
                           " a block can have");
    if (const size_t limit = SharedOptIn::instance().limit(launch.kernel_address); launch.shared_bytes > limit)
      throw EmulationError("mcdl::emu: " + std::to_string(launch.shared_bytes) +
                           " bytes of dynamic shared memory exceed the kernel's " + std::to_string(limit) +
                           "; above 48 KB a kernel needs cudaFuncSetAttribute(kernel, "
                           "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first");
  }

  void run_block(unsigned long long block, const std::vector<MemoryRegion>& static_shared) {
    const dim3 g = launch_->grid, b = launch_->block;
    builtins.block_idx = {static_cast<unsigned>(block % g.x), static_cast<unsigned>(block / g.x % g.y),
                          static_cast<unsigned>(block / g.x / g.y)};
    // 0xFF bytes are NaN as float or double: reads of memory no thread of this block wrote show up.
    for (const MemoryRegion& region : static_shared) std::memset(region.data, 0xFF, region.size);
    if (launch_->shared_bytes > 0) std::memset(builtins.dynamic_shared, 0xFF, launch_->shared_bytes);
    for (unsigned t = 0; t < n_; ++t) {
      threads_[t] = ThreadState{};
      threads_[t].index = {t % b.x, t / b.x % b.y, t / (b.x * b.y)};
      threads_[t].linear = t;
    }
    exited_ = 0;
    at_barrier_ = 0;
    const uint64_t stream = mix64(block);

    start_order_.resize(n_);
    std::iota(start_order_.begin(), start_order_.end(), 0u);
    arrange(start_order_, stream);
    for (next_start_ = 0; next_start_ < n_;) {
      Fiber* runner = pool_.acquire();
      runner->start(&run_threads);
      switch_to(runner);
    }
    for (uint64_t round = 1; exited_ < n_; ++round) {
      round_order_.clear();
      for (const ThreadState& thread : threads_)
        if (thread.status == Status::runnable) round_order_.push_back(thread.linear);
      if (round_order_.empty())
        report_stuck(at_barrier_ > 0 ? "divergent __syncthreads: some threads of the block never reach the "
                                       "barrier the others wait at"
                                     : "a warp operation can never complete: a lane in its mask has exited "
                                       "or waits at another operation");
      arrange(round_order_, stream + round);
      for (unsigned t : round_order_) {
        ThreadState& thread = threads_[t];
        thread.status = Status::running;
        builtins.thread_idx = thread.index;
        current_thread = &thread;
        switch_to(thread.fiber);
      }
    }
  }

  // Body of a runner fiber: starts the not yet started threads one after another.
  static void run_threads() {
    Scheduler& self = instance();
    StackSwitch::end(nullptr, &self.scheduler_stack_bottom_, &self.scheduler_stack_size_);
    Fiber* fiber = self.running_fiber_;
    while (self.next_start_ < self.n_) {
      ThreadState& thread = self.threads_[self.start_order_[self.next_start_++]];
      fiber->thread = &thread;
      thread.fiber = fiber;
      thread.status = Status::running;
      builtins.thread_idx = thread.index;
      current_thread = &thread;
      try {
        self.launch_->invoke(self.launch_->call);
      } catch (...) {
        thread.error = std::current_exception();
      }
      thread.status = Status::exited;
      if (thread.error) break;
      ++self.exited_;
    }
    fiber->finished = true;
    // Back to the scheduler for good, so that nothing of this frame runs after ASan has been told
    // that the fiber's fake stack is gone.
    StackSwitch::begin(nullptr, self.scheduler_stack_bottom_, self.scheduler_stack_size_);
    void* never_resumed;
    switch_stack(&never_resumed, self.scheduler_stack_pointer_);
  }

  void switch_to(Fiber* fiber) {
    running_fiber_ = fiber;
    void* fake_stack = nullptr;
    StackSwitch::begin(&fake_stack, fiber->stack_bottom(), Fiber::stack_size());
    switch_stack(&scheduler_stack_pointer_, fiber->stack_pointer);
    StackSwitch::end(fake_stack);
    current_thread = nullptr;
    if (fiber->finished) {
      ThreadState* last = fiber->thread;
      pool_.release(fiber);
      if (last != nullptr && last->error && !unwinding_) rethrow_with_context(*last);
      return;
    }
    ThreadState& thread = *fiber->thread;
    if (thread.status == Status::at_block_barrier) {
      if (++at_barrier_ == n_) release_block();
    } else {
      release_warp_group(thread);
    }
  }

  static bool same_location(const std::source_location& a, const std::source_location& b) {
    return a.line() == b.line() && a.column() == b.column() && std::strcmp(a.file_name(), b.file_name()) == 0;
  }

  void release_block() {
    const WaitOp& first = threads_[0].op;
    unsigned count = 0;
    for (const ThreadState& thread : threads_) {
      if (thread.op.variant != first.variant || !same_location(thread.op.where, first.where))
        report_stuck("divergent __syncthreads: the threads of the block wait at different barriers");
      count += thread.op.operand;
    }
    uint64_t result = 0;
    switch (static_cast<BarrierResult>(first.variant)) {
      case BarrierResult::none:
        break;
      case BarrierResult::count:
        result = count;
        break;
      case BarrierResult::all:
        result = count == n_;
        break;
      case BarrierResult::any:
        result = count > 0;
        break;
    }
    for (ThreadState& thread : threads_) {
      thread.status = Status::runnable;
      thread.result = result;
    }
    at_barrier_ = 0;
  }

  // The lane a shuffle reads from, following the PTX ISA's shfl.sync: `width` splits the warp into
  // segments; a source beyond the segment's end (or before its start, for up) is the lane itself.
  static unsigned shuffle_source(const WaitOp& op, unsigned lane) {
    const unsigned b = op.operand & 31u, segment_mask = (warp_lanes - op.width) & 31u;
    const unsigned min_lane = lane & segment_mask;
    const unsigned max_lane = min_lane | (31u & ~segment_mask);
    int source = static_cast<int>(lane);
    bool in_range = true;
    switch (static_cast<ShuffleMode>(op.variant)) {
      case ShuffleMode::idx:
        source = static_cast<int>(min_lane | (b & ~segment_mask));
        break;
      case ShuffleMode::up:
        source = static_cast<int>(lane) - static_cast<int>(b);
        in_range = source >= static_cast<int>(min_lane);
        break;
      case ShuffleMode::down:
        source = static_cast<int>(lane + b);
        in_range = source <= static_cast<int>(max_lane);
        break;
      case ShuffleMode::bfly:
        source = static_cast<int>(lane ^ b);
        in_range = source <= static_cast<int>(max_lane);
        break;
    }
    return in_range ? static_cast<unsigned>(source) : lane;
  }

  void release_warp_group(const ThreadState& arrived) {
    const unsigned base = arrived.linear / warp_lanes * warp_lanes;
    const unsigned lanes_in_block = std::min(warp_lanes, n_ - base);
    const unsigned present = lanes_in_block == warp_lanes ? ~0u : (1u << lanes_in_block) - 1;
    const unsigned members = arrived.op.mask & present;
    const WaitOp& op = arrived.op;
    for (unsigned bits = members; bits != 0; bits &= bits - 1) {
      const ThreadState& member = threads_[base + std::countr_zero(bits)];
      const WaitOp& other = member.op;
      if (member.status != Status::at_warp_op || other.kind != op.kind || other.variant != op.variant ||
          other.mask != op.mask || other.width != op.width || other.value_bytes != op.value_bytes ||
          other.collective != op.collective)
        return;
      if (op.kind == WaitKind::collective && !same_location(other.where, op.where)) return;
    }
    if (op.kind == WaitKind::collective) run_collective(op, base);
    unsigned ballot = 0;
    for (unsigned bits = members; bits != 0; bits &= bits - 1)
      if (threads_[base + std::countr_zero(bits)].op.operand != 0) ballot |= bits & -bits;
    for (unsigned bits = members; bits != 0; bits &= bits - 1) {
      const unsigned lane = static_cast<unsigned>(std::countr_zero(bits));
      ThreadState& thread = threads_[base + lane];
      if (op.kind == WaitKind::vote) thread.result = ballot;
      if (op.kind == WaitKind::shuffle) {
        // Reading a lane that does not take part (outside the mask, or past the block's last
        // thread) is undefined in CUDA: the lane gets all-one bits (NaN for floating point).
        const unsigned source = shuffle_source(thread.op, lane);  // each lane's own source lane or delta
        thread.result = members >> source & 1u ? threads_[base + source].op.value : ~uint64_t{0};
      }
      thread.status = Status::runnable;
    }
  }

  // The lanes of a collective are the 32 of a full warp (the caller checks before it waits).
  void run_collective(const WaitOp& op, unsigned base) const {
    void* arguments[warp_lanes];
    for (unsigned lane = 0; lane < warp_lanes; ++lane)
      arguments[lane] = reinterpret_cast<void*>(static_cast<uintptr_t>(threads_[base + lane].op.value));
    try {
      op.collective(arguments);
    } catch (const EmulationError& error) {
      throw EmulationError(block_description() + ", warp " + std::to_string(base / warp_lanes) + ": " + op.name +
                           " (" + to_string(op.where) + "): " + error.what());
    }
  }

  std::string block_description() const {
    return "mcdl::emu: kernel " + function_name(launch_->kernel_address) + " <<<grid " + to_string(launch_->grid) +
           ", block " + to_string(launch_->block) + ", " + std::to_string(launch_->shared_bytes) + " bytes>>>, block " +
           to_string(dim3(builtins.block_idx));
  }

  [[noreturn]] void rethrow_with_context(const ThreadState& thread) const {
    try {
      std::rethrow_exception(thread.error);
    } catch (const EmulationError& error) {
      throw EmulationError(block_description() + ", thread " + to_string(dim3(thread.index)) + ": " + error.what());
    }
  }

  static std::string describe(const ThreadState& thread) {
    const WaitOp& op = thread.op;
    switch (thread.status) {
      case Status::exited:
        return "exited";
      case Status::at_block_barrier:
        return std::string("wait at ") + op.name + " (" + to_string(op.where) + ")";
      case Status::at_warp_op:
        return std::string("wait at ") + op.name + " (mask " + hex(op.mask) +
               (op.kind == WaitKind::shuffle ? ", width " + std::to_string(op.width) : "") + ", " +
               to_string(op.where) + ")";
      default:
        return "runnable";
    }
  }

  // Throws an EmulationError that lists what every thread of the block is doing.
  [[noreturn]] void report_stuck(const char* headline) const {
    constexpr size_t max_groups = 16;
    std::string message = block_description() + ": " + headline + ". Threads (by linear index):";
    size_t groups = 0;
    unsigned first = 0;
    std::string state = describe(threads_[0]);
    for (unsigned t = 1; t <= n_; ++t) {
      std::string next = t < n_ ? describe(threads_[t]) : std::string();
      if (t < n_ && next == state) continue;
      if (++groups <= max_groups)
        message += "\n  " +
                   (first + 1 == t ? "thread " + std::to_string(first)
                                   : "threads " + std::to_string(first) + "-" + std::to_string(t - 1)) +
                   ": " + state;
      first = t;
      state = std::move(next);
    }
    if (groups > max_groups) message += "\n  ... and " + std::to_string(groups - max_groups) + " more groups";
    throw EmulationError(message);
  }

  std::mutex mutex_;
  FiberPool pool_;
  void* scheduler_stack_pointer_ = nullptr;  // where switch_stack saved the scheduler
  // The stack the scheduler runs on (the launching host thread's), for StackSwitch.
  const void* scheduler_stack_bottom_ = nullptr;
  size_t scheduler_stack_size_ = 0;
  Fiber* running_fiber_ = nullptr;
  const KernelLaunch* launch_ = nullptr;
  std::vector<SharedChunk> dynamic_shared_;
  std::vector<ThreadState> threads_;
  std::vector<unsigned> start_order_, round_order_;
  unsigned n_ = 0, next_start_ = 0, exited_ = 0, at_barrier_ = 0;
  bool unwinding_ = false;  // unwind_suspended_threads is at work
};

}  // namespace mcdl::emu::detail

namespace mcdl::emu {

// Runs kernel<<<grid, block, shared_bytes, stream>>>(args...) on the CPU and returns when it has
// finished, or records it when the stream is being captured (stream_capture.h). The arguments are
// converted to the parameter types once, as CUDA copies them into parameter space, and each
// thread gets its own copy.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
            Args&&... args) {
  if (!stream_usable(stream))
    throw EmulationError("mcdl::emu: a kernel was launched on the legacy default stream while another stream "
                         "was being captured");
  struct Call {
    void (*kernel)(Params...);
    std::tuple<Params...> params;
  };
  on_stream(stream, [call = Call{kernel, std::tuple<Params...>(std::forward<Args>(args)...)}, grid, block,
                     shared_bytes] {
    const detail::KernelLaunch launch{reinterpret_cast<uintptr_t>(call.kernel),
                                      [](const void* c) {
                                        const Call& call = *static_cast<const Call*>(c);
                                        std::apply(call.kernel, call.params);
                                      },
                                      &call,
                                      grid,
                                      block,
                                      shared_bytes};
    detail::Scheduler::instance().run(launch);
  });
}

}  // namespace mcdl::emu
