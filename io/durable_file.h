// Writes that a crash or a full disk never turn into a broken file. Every write, fsync, close
// and rename is checked; a failure throws mcdl::Error naming the file, the OS error and what to
// do, and leaves the file it was replacing (or appending to) as it was before the call.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/file_handle.h"

namespace mcdl {

// Writes "<path>.tmp"; commit() fsyncs it, renames it over `path` and fsyncs the directory, so a
// crash leaves either the old file or the whole new one. Destroyed without commit() (an error on
// the way), it removes the temporary file and `path` stays as it was. Messages start with
// `context` (e.g. "save_safetensors: <path>"). A file that several writers may write at once (the
// same bytes, from several processes or threads) needs a temporary file of each writer's own:
// TemporaryName::per_writer ("<path>.tmp.<pid>.<n>"); the last rename wins, whole.
enum class TemporaryName { fixed, per_writer };

class AtomicFile {
 public:
  AtomicFile(std::string path, std::string context, TemporaryName temporary = TemporaryName::fixed);
  explicit AtomicFile(const std::string& path) : AtomicFile(path, path) {}
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();
  // Where the bytes are until commit() (readable, e.g. to map a scratch file never committed).
  const std::string& temporary_path() const { return tmp_path_; }

 private:
  std::string path_, tmp_path_, context_;
  FileHandle file_;
  bool committed_ = false;
};

// The whole of `bytes` as `path`, through AtomicFile.
void write_file_atomically(const std::string& path, std::string_view bytes);
// A copy of `from` as `to`, through AtomicFile.
void copy_file_atomically(const std::string& from, const std::string& to);

// Appends each text to its file (created if missing), all or nothing: if any write or fsync
// fails, every file is truncated back to its length before the call, so no half row is left.
void append_to_files(const std::vector<std::pair<std::string, std::string>>& appends);

// Creates, writes, fsyncs and removes a small probe file in `directory` (which must exist), so a
// full disk or a read-only directory is found before hours of work rather than at the first
// checkpoint. On failure throws one message naming the directory, the OS error and `what_to_do`.
void probe_writable_directory(const std::string& directory, const std::string& what_to_do);

// What the user can do about a failed write with this errno (full disk, read-only directory), as
// a clause starting with "; ", or "" when there is nothing specific to say.
std::string write_error_advice(int error);

}  // namespace mcdl
