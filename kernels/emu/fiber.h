// Fibers for emulated CUDA threads: stacks mmap'ed on demand and reused by every later launch,
// switched by switch_stack below.
//
// Why not ucontext: swapcontext saves and restores the signal mask with a system call at every
// switch, and a warp operation switches 32 fibers. Measured on an emulated training run, the
// switches (swapcontext and the kernel's side of its calls) took about 70% of the time. The
// switch below saves only what the x86-64 System V ABI says a called function must preserve.
//
// Under AddressSanitizer (make test-asan) every switch between stacks is announced with the
// sanitizer fiber API (StackSwitch below), so that ASan checks each fiber against its own stack
// bounds and keeps a separate fake stack per fiber; in other builds StackSwitch compiles to nothing.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "the CUDA emulator's fiber switch (kernels/emu/fiber.h) is written for x86-64"
#endif

namespace mcdl::emu::detail {

// Saves the registers a called function must preserve (rbp, rbx, r12 to r15, and the SSE and x87
// control words) on the running stack, stores its stack pointer in *save, and continues where
// the stack `to` was saved: in the switch_stack call that saved it, or for a fresh fiber in
// fiber_entry. The saved frame, from the stack pointer up: the control words (8 bytes), r15,
// r14, r13, r12, rbx, rbp, the return address.
[[gnu::naked, gnu::noinline]] inline void switch_stack(void** /*save: rdi*/, void* /*to: rsi*/) {
  asm("pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "subq $8, %rsp\n\t"
      "stmxcsr (%rsp)\n\t"
      "fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\t"
      "fldcw 4(%rsp)\n\t"
      "addq $8, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret");
}

// Where a fresh fiber's first switch returns to: calls its entry function (in r12) with the
// stack aligned as a call requires and rbp 0, which ends every frame-pointer walk there. The
// entry never returns (it leaves with a last switch_stack); ud2 traps if it did.
[[gnu::naked, gnu::noinline]] inline void fiber_entry() {
  asm("callq *%r12\n\t"
      "ud2");
}

// One side of a switch between the scheduler's stack and a fiber's: begin() right before
// switch_stack, end() first thing after control arrives on the new stack. `save` holds
// the leaving side's fake stack until control comes back; begin(nullptr, ...) on a side that
// never comes back (a finished fiber) lets ASan free it.
struct StackSwitch {
#if defined(__SANITIZE_ADDRESS__)
  static void begin(void** save, const void* to_bottom, size_t to_size) {
    __sanitizer_start_switch_fiber(save, to_bottom, to_size);
  }
  // Also gives the bounds of the stack that was left (to switch back to it later).
  static void end(void* save, const void** from_bottom = nullptr, size_t* from_size = nullptr) {
    __sanitizer_finish_switch_fiber(save, from_bottom, from_size);
  }
#else
  static void begin(void**, const void*, size_t) {}
  static void end(void*, const void** = nullptr, size_t* = nullptr) {}
#endif
};

struct ThreadState;

// 256 KiB of address space per stack, reserved with MAP_NORESERVE: only the pages a kernel
// touches are committed, so a 1024-thread block costs little memory even in -O0 builds. The guard
// page below each stack turns an overflow into a segfault instead of corrupting a neighbour.
inline constexpr size_t fiber_stack_bytes = 256 * 1024;

class Fiber {
 public:
  Fiber() : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    void* mapping = mmap(nullptr, page_ + fiber_stack_bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (mapping == MAP_FAILED) throw std::bad_alloc();
    mapping_ = static_cast<unsigned char*>(mapping);
    if (mprotect(mapping_, page_, PROT_NONE) != 0) {
      munmap(mapping_, page_ + fiber_stack_bytes);
      throw std::bad_alloc();
    }
  }
  ~Fiber() { munmap(mapping_, page_ + fiber_stack_bytes); }
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Makes the next switch to this fiber run entry() from the top of the stack. entry() must never
  // return: it ends with a switch_stack to a stack that does not come back.
  void start(void (*entry)()) {
#if defined(__SANITIZE_ADDRESS__)
    // A fiber abandoned mid-kernel (a launch that failed) leaves its frames' redzones poisoned.
    ASAN_UNPOISON_MEMORY_REGION(mapping_ + page_, fiber_stack_bytes);
#endif
    auto* top = reinterpret_cast<uint64_t*>(mapping_ + page_ + fiber_stack_bytes);  // page-aligned
    uint64_t* frame = top - 10;  // switch_stack's saved frame, then 16 bytes: fiber_entry's rsp is top − 16
    uint32_t sse_control;
    uint16_t x87_control;
    asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(sse_control), "=m"(x87_control));
    frame[0] = sse_control | uint64_t{x87_control} << 32;
    for (int reg = 1; reg <= 6; ++reg) frame[reg] = 0;  // r15, r14, r13, r12, rbx, rbp
    frame[4] = reinterpret_cast<uint64_t>(entry);         // r12
    frame[7] = reinterpret_cast<uint64_t>(&fiber_entry);  // switch_stack's return address
    frame[8] = frame[9] = 0;
    stack_pointer = frame;
    thread = nullptr;
    finished = false;
    fake_stack = nullptr;
  }
  const void* stack_bottom() const { return mapping_ + page_; }
  static constexpr size_t stack_size() { return fiber_stack_bytes; }

  void* stack_pointer = nullptr;  // where switch_stack saved the fiber (or start() prepared it)
  ThreadState* thread = nullptr;  // the emulated thread on this fiber (the last one once finished)
  bool finished = false;          // entry() is done with this fiber (its last switch is under way)
  void* fake_stack = nullptr;     // ASan's save slot while the fiber is switched out (StackSwitch)

 private:
  size_t page_;
  unsigned char* mapping_ = nullptr;
};

class FiberPool {
 public:
  Fiber* acquire() {
    if (free_.empty()) {
      fibers_.push_back(std::make_unique<Fiber>());
      return fibers_.back().get();
    }
    Fiber* fiber = free_.back();
    free_.pop_back();
    return fiber;
  }
  void release(Fiber* fiber) { free_.push_back(fiber); }
  // After a launch aborted by an error: every fiber is free again. The scheduler has unwound the
  // threads still suspended (Scheduler::unwind_suspended_threads), so no stack is dropped with
  // live objects on it.
  void reclaim_all() {
    free_.clear();
    for (auto& fiber : fibers_) free_.push_back(fiber.get());
  }

 private:
  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<Fiber*> free_;
};

}  // namespace mcdl::emu::detail
