// Owns a POSIX file descriptor: read/write/pread report short transfers and errno exactly, which
// the checked writes (io/durable_file.h) and the bounds checks of the readers rely on. Also the
// first bytes of a file, which the readers that tell formats apart look at.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/error.h"

namespace mcdl {

class FileHandle {
 public:
  explicit FileHandle(int fd) : fd_(fd) {}
  ~FileHandle() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileHandle(FileHandle&& other) noexcept : fd_(other.release()) {}
  FileHandle& operator=(FileHandle&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = other.release();
    }
    return *this;
  }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// The first `count` bytes of the file at `path`, fewer when it is shorter; an error naming the
// path when it cannot be opened or read.
inline std::vector<uint8_t> read_file_head(const std::string& path, size_t count) {
  const FileHandle file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  check(file.get() >= 0, path, ": cannot open: ", std::strerror(errno));
  std::vector<uint8_t> head(count);
  size_t got = 0;
  while (got < count) {
    const ssize_t n = ::read(file.get(), head.data() + got, count - got);
    if (n < 0 && errno == EINTR) continue;
    check(n >= 0, path, ": cannot read: ", std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  head.resize(got);
  return head;
}

}  // namespace mcdl
