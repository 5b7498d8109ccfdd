// Dynamic shared memory above 48 KB per block, which CUDA grants a kernel only after
// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): the emulator
// keeps each kernel's grant, so that a launch that forgot it fails here as it would on a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace mcdl::emu::detail {

inline constexpr size_t default_dynamic_shared_bytes = 48 * 1024;
inline constexpr size_t max_dynamic_shared_bytes = 227 * 1024;  // sm_90's opt-in limit per block

class SharedOptIn {
 public:
  static SharedOptIn& instance() {
    static SharedOptIn registry;
    return registry;
  }
  void grant(uintptr_t kernel, size_t bytes) {
    std::lock_guard lock(mutex_);
    granted_[kernel] = bytes;
  }
  // What a launch of `kernel` may have.
  size_t limit(uintptr_t kernel) {
    std::lock_guard lock(mutex_);
    const auto found = granted_.find(kernel);
    return found == granted_.end() || found->second < default_dynamic_shared_bytes ? default_dynamic_shared_bytes
                                                                                     : found->second;
  }

 private:
  std::mutex mutex_;
  std::map<uintptr_t, size_t> granted_;
};

}  // namespace mcdl::emu::detail
