// Shared pieces of the libFuzzer targets (tests/fuzz/fuzz_*.cpp, built by `make fuzz`).
//
// A target feeds the fuzzer's bytes to one parser. mcdl::Error is the parsers' clean rejection
// and is caught; anything else (another exception type, a crash, a sanitizer report, a timeout,
// running out of memory) is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "engine/error.h"

namespace mcdl::fuzz {

// Runs `parse`, treating mcdl::Error as the expected rejection of a malformed input.
template <class Parse>
int guarded(Parse&& parse) {
  try {
    parse();
  } catch (const mcdl::Error&) {
  }
  return 0;
}

// A scratch directory of this process (in /dev/shm when present, so writes stay in memory),
// for the parsers that read only from a path. Removed at exit.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const std::filesystem::path root =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    const std::filesystem::path path = root / ("mcdl_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    static const std::filesystem::path remove = path;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(remove, ignored);
    });
    return path.string();
  }();
  return dir;
}

// Creates scratch_dir()/name (and its parents) if missing.
inline void make_scratch_dir(const std::string& name) { std::filesystem::create_directories(scratch_dir() + "/" + name); }

// Writes `bytes` as scratch_dir()/name and returns its path.
inline std::string write_scratch(const std::string& name, std::span<const uint8_t> bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out.good()) std::abort();
  return path;
}

}  // namespace mcdl::fuzz
