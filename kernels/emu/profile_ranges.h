// The emulator's stand-in for NVTX: profiler ranges (mcdl::cuda::profile_range_push / _pop in an
// emulator build) go to an in-memory log while a test records them, so the test can check which
// ranges a step opens and that every one is closed, and count the emulated runtime's marks (its
// host waits). Nothing is kept while no test records.
#pragma once
#include <mutex>
#include <string>
#include <vector>

namespace mcdl::emu {

namespace detail {
struct RangeLog {
  std::mutex mutex;
  bool recording = false;
  std::vector<std::string> names;  // every push while recording, in order
  int open = 0;                    // pushes while recording not yet popped
};
inline RangeLog& range_log() {
  static RangeLog log;
  return log;
}
}  // namespace detail

inline void record_range_push(const char* name) {
  detail::RangeLog& log = detail::range_log();
  const std::lock_guard<std::mutex> lock(log.mutex);
  if (!log.recording) return;
  log.names.emplace_back(name);
  ++log.open;
}

// A point event (pushed and popped at once): e.g. the runtime's "host_wait".
inline void record_mark(const char* name) {
  detail::RangeLog& log = detail::range_log();
  const std::lock_guard<std::mutex> lock(log.mutex);
  if (log.recording) log.names.emplace_back(name);
}

inline void record_range_pop() {
  detail::RangeLog& log = detail::range_log();
  const std::lock_guard<std::mutex> lock(log.mutex);
  if (log.recording) --log.open;
}

// Records the ranges opened during its lifetime (one recording at a time).
class RangeRecording {
 public:
  RangeRecording() { set(true); }
  ~RangeRecording() { set(false); }
  RangeRecording(const RangeRecording&) = delete;
  RangeRecording& operator=(const RangeRecording&) = delete;

  std::vector<std::string> names() const {
    detail::RangeLog& log = detail::range_log();
    const std::lock_guard<std::mutex> lock(log.mutex);
    return log.names;
  }
  int open() const {
    detail::RangeLog& log = detail::range_log();
    const std::lock_guard<std::mutex> lock(log.mutex);
    return log.open;
  }

 private:
  static void set(bool recording) {
    detail::RangeLog& log = detail::range_log();
    const std::lock_guard<std::mutex> lock(log.mutex);
    log.recording = recording;
    log.names.clear();
    log.open = 0;
  }
};

}  // namespace mcdl::emu
