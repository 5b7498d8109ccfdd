// The GPU objects a process keeps while it uses the GPU — library handles, their workspaces,
// cached plans — each created on first use and registered for release_device()
// (kernels/cuda/runtime.h), which releases them newest first; used again after that, they are
// created afresh. Included by .cu files only.
#pragma once
#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace mcdl::cuda {

// Registers `release` to run at the next release_device(), before those registered earlier. It
// must not throw (it reports a failure on stderr and goes on, so that the rest is released).
void at_device_release(std::function<void()> release);

// One such object: `create` fills a default-constructed T, `destroy` releases what it holds
// (also a T that `create` filled only partly before it threw: it skips members still empty).
// Deliberately never destroyed with the program's statics: by then the CUDA runtime may have
// torn itself down (its atexit handler), and a CUDA call after that is an error. What
// release_device() has not released is left to the process's end.
template <class T>
class DeviceResource {
 public:
  constexpr DeviceResource(void (*create)(T&), void (*destroy)(T&)) : create_(create), destroy_(destroy) {}
  DeviceResource(const DeviceResource&) = delete;
  DeviceResource& operator=(const DeviceResource&) = delete;

  // Valid until the next release_device(), which must not overlap GPU work.
  T& get() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!value_) {
      T* created = new T();
      try {
        create_(*created);
      } catch (...) {
        destroy_(*created);
        delete created;
        throw;
      }
      value_ = created;
      at_device_release([this] { release(); });
    }
    return *value_;
  }

 private:
  void release() {
    T* value;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      value = std::exchange(value_, nullptr);
    }
    if (!value) return;
    destroy_(*value);
    delete value;
  }

  void (*create_)(T&);
  void (*destroy_)(T&);
  std::mutex mutex_;
  T* value_ = nullptr;
};

// Reports a failed release on stderr ("warning: releasing <what> failed: <detail>"): release
// goes on with the other objects.
void report_release_failure(const char* what, const std::string& detail);

}  // namespace mcdl::cuda
