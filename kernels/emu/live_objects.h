// What the emulated CUDA runtime and libraries hold at this moment, by kind: streams, events,
// library handles and descriptors, and the stream-ordered pool's memory (blocks in use, frees not
// yet seen by a synchronize, and freed blocks the pool keeps). A test checks that
// cuda::release_device() brings every count back to zero (tests/emu/test_device_release.cpp);
// on a GPU, compute-sanitizer's leak check does the same (make test-gpu-sanitize).
//
// The pool is modelled as CUDA's default pool behaves: a freed block stays with the pool until a
// synchronize has seen the free, then the pool keeps up to its release threshold
// (cudaMemPoolAttrReleaseThreshold, default 0) of such blocks until cudaMemPoolTrimTo returns
// them. Only the accounting is kept: the host memory behind a block is freed at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace mcdl::emu {

struct LiveObjects {
  std::mutex mutex;
  std::map<std::string, int64_t> counts;                // kind -> live objects (created - destroyed)
  std::unordered_map<const void*, size_t> allocations;  // pool blocks in use, by address
  size_t pending_free_bytes = 0;  // freed on a stream, not yet observed by a synchronize
  size_t idle_pool_bytes = 0;     // freed and kept by the pool
  uint64_t release_threshold = 0;
};

inline LiveObjects& live_objects() {
  static LiveObjects* instance = new LiveObjects();  // never destroyed: counted objects may outlive statics
  return *instance;
}

// One more (+1) or one fewer (-1) live object of `kind`.
inline void count_object(const char* kind, int change) {
  LiveObjects& live = live_objects();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.counts[kind] += change;
}

// A new T(args...), counted as one more live `kind`.
template <class T, class... Args>
T* make_counted(const char* kind, Args&&... args) {
  T* object = new T{std::forward<Args>(args)...};
  count_object(kind, 1);
  return object;
}

// Deletes an object made by make_counted; false (nothing done) for a null pointer.
template <class T>
bool destroy_counted(T* object, const char* kind) {
  if (!object) return false;
  delete object;
  count_object(kind, -1);
  return true;
}

// A synchronize has seen every queued free: the pool keeps those blocks up to its threshold.
inline void observe_frees() {
  LiveObjects& live = live_objects();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.idle_pool_bytes += live.pending_free_bytes;
  live.pending_free_bytes = 0;
  if (live.idle_pool_bytes > live.release_threshold) live.idle_pool_bytes = static_cast<size_t>(live.release_threshold);
}

// Every kind with something still alive (pool memory as "pool blocks in use", "pool bytes
// pending free", "pool bytes kept"); empty when everything has been released.
inline std::map<std::string, int64_t> live_object_counts() {
  LiveObjects& live = live_objects();
  std::lock_guard<std::mutex> lock(live.mutex);
  std::map<std::string, int64_t> result;
  for (const auto& [kind, count] : live.counts)
    if (count != 0) result[kind] = count;
  if (!live.allocations.empty()) result["pool blocks in use"] = static_cast<int64_t>(live.allocations.size());
  if (live.pending_free_bytes) result["pool bytes pending free"] = static_cast<int64_t>(live.pending_free_bytes);
  if (live.idle_pool_bytes) result["pool bytes kept"] = static_cast<int64_t>(live.idle_pool_bytes);
  return result;
}

}  // namespace mcdl::emu
