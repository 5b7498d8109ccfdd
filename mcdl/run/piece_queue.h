// Pieces of a checkpoint handed from the training thread, which receives them from the other
// ranks between steps, to the thread that writes the file. At most `capacity` pieces wait, so rank 0
// holds a few pieces of the other ranks' rows, never all of them.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "engine/error.h"

namespace mcdl {

class PieceQueue {
 public:
  explicit PieceQueue(size_t capacity) : capacity_(capacity) {}

  // Waits while `capacity` pieces wait; once closed, the bytes are dropped. Empty pieces are not
  // kept (a tensor of no bytes asks for none).
  void push(const void* data, size_t bytes) {
    if (bytes == 0) return;
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return closed_ || pieces_.size() < capacity_; });
    if (closed_) return;
    const auto* begin = static_cast<const char*>(data);
    pieces_.emplace_back(begin, begin + bytes);
    changed_.notify_all();
  }
  // Whether a push would not wait (closed: it would drop its piece at once).
  bool has_room() {
    const std::lock_guard lock(mutex_);
    return closed_ || pieces_.size() < capacity_;
  }
  // The oldest piece, waiting for one; throws once closed.
  std::vector<char> pop() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return closed_ || !pieces_.empty(); });
    check(!closed_, "the checkpoint's rows stopped coming: the run ended before they were all sent");
    std::vector<char> piece = std::move(pieces_.front());
    pieces_.pop_front();
    changed_.notify_all();
    return piece;
  }
  // No more pieces go either way: the writer failed, or the run ends before the last piece.
  void close() {
    const std::lock_guard lock(mutex_);
    closed_ = true;
    pieces_.clear();
    changed_.notify_all();
  }

 private:
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<char>> pieces_;
  bool closed_ = false;
};

}  // namespace mcdl
