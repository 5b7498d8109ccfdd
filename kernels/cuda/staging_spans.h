// Where uploads go in a circular staging buffer: spans handed out in order and released oldest
// first (each once its copy to the device has run), the way copies complete on one stream. Only
// the bookkeeping, in plain C++ (kernels/cuda/upload_staging.cu pairs each span with an event).
#pragma once
#include <cstddef>
#include <deque>
#include <optional>
#include <stdexcept>
#include <utility>

namespace mcdl::cuda {

class StagingSpans {
 public:
  explicit StagingSpans(size_t capacity) : capacity_(capacity) {}

  size_t capacity() const { return capacity_; }
  size_t live() const { return spans_.size(); }

  // Takes `bytes` (0 < bytes ≤ capacity) after the newest span, wrapping to the start when the
  // end has no room, and returns their offset; nullopt while that space still holds live spans
  // (release the oldest and ask again).
  std::optional<size_t> take(size_t bytes) {
    if (bytes == 0 || bytes > capacity_) throw std::invalid_argument("StagingSpans::take: bad size");
    if (spans_.empty()) head_ = 0;
    std::optional<size_t> at;
    const size_t tail = spans_.empty() ? capacity_ : spans_.front().first;
    if (spans_.empty() || tail < head_) {  // live: [tail, head); free: [head, capacity) and [0, tail)
      if (capacity_ - head_ >= bytes) at = head_;
      else if (tail >= bytes) at = 0;
    } else if (tail - head_ >= bytes) {  // wrapped, live: [tail, capacity) and [0, head)
      at = head_;
    }
    if (at) {
      spans_.emplace_back(*at, *at + bytes);
      head_ = *at + bytes;
    }
    return at;
  }

  // The oldest span's copy has run: its space is free again.
  void release_oldest() {
    if (spans_.empty()) throw std::logic_error("StagingSpans::release_oldest: no live span");
    spans_.pop_front();
  }

 private:
  size_t capacity_, head_ = 0;
  std::deque<std::pair<size_t, size_t>> spans_;  // [begin, end) of each live span, oldest first
};

}  // namespace mcdl::cuda
