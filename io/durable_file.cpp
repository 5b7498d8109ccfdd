#include "io/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/error.h"

namespace mcdl {
namespace {

// Writes all of `bytes`, going on after short writes (a write that reaches a size limit or the
// end of the disk's space stores what fits, and the next one fails with the reason). Returns 0
// or the errno of the failed write.
int write_all(int fd, const void* data, size_t bytes) {
  const char* in = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t put = ::write(fd, in, std::min<size_t>(bytes, size_t{1} << 30));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return errno;
    in += put;
    bytes -= static_cast<size_t>(put);
  }
  return 0;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string write_error_advice(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT: return "; the disk is full (or the quota used up): free some space";
    case EFBIG: return "; a file size limit was reached (ulimit -f) or the disk is full";
    case EROFS: return "; the file system is read-only";
    case EACCES:
    case EPERM: return "; there is no permission to write there";
    case EIO: return "; the disk reported an I/O error";
    default: return "";
  }
}

namespace {

std::string temporary_path_for(const std::string& path, TemporaryName temporary) {
  if (temporary == TemporaryName::fixed) return path + ".tmp";
  static std::atomic<uint64_t> writers{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writers.fetch_add(1));
}

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string context, TemporaryName temporary)
    : path_(std::move(path)),
      tmp_path_(temporary_path_for(path_, temporary)),
      context_(std::move(context)),
      file_(::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
  if (file_.get() < 0) {
    const int error = errno;
    fail(context_, ": cannot create ", tmp_path_, ": ", std::strerror(error), write_error_advice(error));
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    file_ = FileHandle(-1);  // closed first: the name goes, and with it the space
    std::remove(tmp_path_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t bytes) {
  if (const int error = write_all(file_.get(), data, bytes))
    fail(context_, ": writing ", tmp_path_, " failed: ", std::strerror(error), write_error_advice(error), " (",
         path_, " is unchanged)");
}

// fsync before rename: otherwise a crash could persist the rename but not the data. close is
// checked too: on some file systems (NFS) a write error shows only there.
void AtomicFile::commit() {
  const auto bad = [&](const char* what) {
    const int error = errno;
    fail(context_, ": ", what, " ", tmp_path_, " failed: ", std::strerror(error), write_error_advice(error), " (",
         path_, " is unchanged)");
  };
  if (::fsync(file_.get()) != 0) bad("fsync of");
  if (::close(file_.release()) != 0) bad("closing");
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    fail(context_, ": renaming ", tmp_path_, " to ", path_, " failed: ", std::strerror(error),
         write_error_advice(error));
  }
  committed_ = true;
  // And the directory: the rename survives a power cut only once its entry is on disk.
  const std::string directory = directory_of(path_);
  const FileHandle dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0 || ::fsync(dir.get()) != 0)
    fail(context_, ": fsync of the directory ", directory, " failed: ", std::strerror(errno));
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  const FileHandle in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) fail("copying ", from, " to ", to, ": cannot open ", from, ": ", std::strerror(errno));
  AtomicFile out(to, "copying " + from + " to " + to);
  std::string buffer(size_t{1} << 20, '\0');
  for (;;) {
    const ssize_t got = ::read(in.get(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("copying ", from, " to ", to, ": reading ", from, " failed: ", std::strerror(errno));
    if (got == 0) break;
    out.write(buffer.data(), static_cast<size_t>(got));
  }
  out.commit();
}

void append_to_files(const std::vector<std::pair<std::string, std::string>>& appends) {
  struct Opened {
    const std::string* path;
    FileHandle fd;
    off_t length;  // before this call
  };
  std::vector<Opened> opened;
  opened.reserve(appends.size());
  // Undoes every append of this call, then throws.
  const auto undo_and_fail = [&](const std::string& path, const char* what, int error) {
    for (Opened& o : opened)
      if (o.fd.get() >= 0 ? ::ftruncate(o.fd.get(), o.length) != 0 : ::truncate(o.path->c_str(), o.length) != 0)
        std::fprintf(stderr, "warning: could not take the partial row back out of %s: %s\n", o.path->c_str(),
                     std::strerror(errno));
    fail(what, " ", path, " failed: ", std::strerror(error), write_error_advice(error),
         " (the files are as they were before)");
  };
  for (const auto& [path, text] : appends) {
    FileHandle fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (fd.get() < 0) undo_and_fail(path, "opening", errno);
    struct stat info;
    if (::fstat(fd.get(), &info) != 0) undo_and_fail(path, "reading the size of", errno);
    opened.push_back({&path, std::move(fd), info.st_size});
    if (const int error = write_all(opened.back().fd.get(), text.data(), text.size()))
      undo_and_fail(path, "appending to", error);
  }
  for (Opened& o : opened)
    if (::fsync(o.fd.get()) != 0) undo_and_fail(*o.path, "fsync of", errno);
  for (Opened& o : opened)
    if (::close(o.fd.release()) != 0) undo_and_fail(*o.path, "closing", errno);
}

void probe_writable_directory(const std::string& directory, const std::string& what_to_do) {
  const std::string probe = directory + "/.mcdl-write-probe-" + std::to_string(::getpid());
  const auto bad = [&](int error) {
    std::remove(probe.c_str());
    fail("cannot write to ", directory, ": ", std::strerror(error), write_error_advice(error),
         " (a test file, ", probe, ", could not be written); ", what_to_do);
  };
  FileHandle fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) bad(errno);
  // One file system block: a full disk has none to give.
  const std::string block(4096, 'p');
  if (const int error = write_all(fd.get(), block.data(), block.size())) bad(error);
  if (::fsync(fd.get()) != 0) bad(errno);
  if (::close(fd.release()) != 0) bad(errno);
  if (std::remove(probe.c_str()) != 0) bad(errno);
}

}  // namespace mcdl
