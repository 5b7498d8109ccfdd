// A one-line progress bar on stderr (only when stderr is a terminal): iteration, images/s,
// ETA and the running loss, redrawn in place at most a few times per second.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace mcdl {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, bool enabled);
  // `done` iterations finished, `images` processed so far in this bar, `status` appended.
  void update(int64_t done, int64_t images, const std::string& status);
  void finish();  // clears the line

 private:
  std::string label_;
  int64_t total_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// "1:02:03" / "2:03".
std::string format_duration(double seconds);

}  // namespace mcdl
