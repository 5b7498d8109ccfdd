// Fibers for emulated CUDA threads: ucontext contexts on mmap'ed stacks, created on demand and
// reused by every later launch.
//
// Under AddressSanitizer (make test-asan) every switch between stacks is announced with the
// sanitizer fiber API (StackSwitch below), so that ASan checks each fiber against its own stack
// bounds and keeps a separate fake stack per fiber; in other builds StackSwitch compiles to nothing.
#pragma once
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace mcdl::emu::detail {

// One side of a switch between the scheduler's stack and a fiber's: begin() right before
// swapcontext/setcontext, end() first thing after control arrives on the new stack. `save` holds
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
    // makecontext needs a context initialised by getcontext; later starts reuse it.
    if (mprotect(mapping_, page_, PROT_NONE) != 0 || getcontext(&context_) != 0) {
      munmap(mapping_, page_ + fiber_stack_bytes);
      throw std::bad_alloc();
    }
  }
  ~Fiber() { munmap(mapping_, page_ + fiber_stack_bytes); }
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Makes the next switch to this fiber run entry() from the top of the stack; when entry()
  // returns, execution continues in `return_to`.
  void start(void (*entry)(), ucontext_t* return_to) {
    context_.uc_stack.ss_sp = mapping_ + page_;
    context_.uc_stack.ss_size = fiber_stack_bytes;
    context_.uc_link = return_to;
    makecontext(&context_, entry, 0);
    thread = nullptr;
    finished = false;
    fake_stack = nullptr;
  }
  ucontext_t* context() { return &context_; }
  const void* stack_bottom() const { return mapping_ + page_; }
  static constexpr size_t stack_size() { return fiber_stack_bytes; }

  ThreadState* thread = nullptr;  // the emulated thread on this fiber (the last one once finished)
  bool finished = false;          // entry() has returned
  void* fake_stack = nullptr;     // ASan's save slot while the fiber is switched out (StackSwitch)

 private:
  size_t page_;
  unsigned char* mapping_ = nullptr;
  ucontext_t context_{};
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
  // After a launch aborted by an error, the fibers of threads that never finished are abandoned
  // mid-kernel (kernel code holds no resources); their stacks are simply started afresh.
  void reclaim_all() {
    free_.clear();
    for (auto& fiber : fibers_) free_.push_back(fiber.get());
  }

 private:
  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<Fiber*> free_;
};

}  // namespace mcdl::emu::detail
