// Reference-counted raw memory on one device. Tensors share a Storage through a
// shared_ptr and address it with an element offset, so views cost no copy.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/device.h"

namespace mcdl {

class Storage {
 public:
  // Uninitialised bytes, or NaN bytes (0xFF) with engine_settings().poison_new_storage.
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // A writable pointer is counted (writes()): a copy made from this storage (a cached bf16 copy
  // of a frozen weight) can then tell that its source may have changed since it was made.
  void* data() {
    writes_.fetch_add(1, std::memory_order_relaxed);
    return data_;
  }
  const void* data() const { return data_; }
  // How many writable pointers to these bytes were handed out so far.
  uint64_t writes() const { return writes_.load(std::memory_order_relaxed); }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  std::atomic<uint64_t> writes_{0};
};

// Bytes currently held by live Storage objects on a device: the leak tests watch this.
int64_t storage_live_bytes(Device device);

// Freed blocks are cached for reuse (per size class, up to 4 GiB); these report and
// return that cache.
int64_t storage_cached_bytes(Device device);
void release_cached_storage();

}  // namespace mcdl
