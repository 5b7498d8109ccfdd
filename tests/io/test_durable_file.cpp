// The checked writes of io/durable_file.h on a full disk (a child under a file size limit, see
// tests/file_size_limit.h) and in directories that cannot be written even as root.
#include "io/durable_file.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "tests/file_size_limit.h"
#include "tests/io/checkpoint_builders.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
using testing::read_text;
namespace fs = std::filesystem;

namespace {

// Runs `write` in a child limited to `limit` bytes per file; it must throw mcdl::Error, whose
// message comes back.
std::string failed_write_message(rlim_t limit, const std::function<void()>& write) {
  const testing::ChildOutcome outcome = testing::run_with_file_size_limit(limit, [&] {
    try {
      write();
    } catch (const Error& e) {
      std::fputs(e.what(), stderr);
      return 0;
    }
    return 1;  // it should have failed
  });
  INFO("stderr: ", outcome.err);
  CHECK(outcome.status == 0);
  return outcome.err;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST_CASE("durable files: a write that runs out of space keeps the old file and removes the temporary one") {
  testing::TempDir dir("mcdl-durable-atomic");
  const std::string path = dir.file("result.csv");
  write_text(path, "the previous result\n");
  const std::string message =
      failed_write_message(100, [&] { write_file_atomically(path, std::string(1000, 'x')); });
  CHECK(message.find(path + ".tmp") != std::string::npos);
  CHECK(message.find("File too large") != std::string::npos);
  CHECK(message.find("ulimit -f") != std::string::npos);
  CHECK(message.find(path + " is unchanged") != std::string::npos);
  CHECK(read_text(path) == "the previous result\n");
  CHECK_FALSE(fs::exists(path + ".tmp"));

  SUBCASE("a copy likewise") {
    write_text(dir.file("big"), std::string(1000, 'y'));
    const std::string copy_message = failed_write_message(100, [&] { copy_file_atomically(dir.file("big"), path); });
    CHECK(copy_message.find("copying " + dir.file("big")) != std::string::npos);
    CHECK(read_text(path) == "the previous result\n");
    CHECK_FALSE(fs::exists(path + ".tmp"));
  }
  SUBCASE("without a limit both go through") {
    write_file_atomically(path, "new\n");
    CHECK(read_text(path) == "new\n");
    copy_file_atomically(path, dir.file("copy"));
    CHECK(read_text(dir.file("copy")) == "new\n");
    CHECK_FALSE(fs::exists(path + ".tmp"));
  }
}

TEST_CASE("durable files: writers of one file at once, each with its own temporary file, all commit it whole") {
  testing::TempDir dir("mcdl-durable-writers");
  const std::string path = dir.file("shared.cache");
  const std::string bytes(100000, 'c');
  {
    // Interleaved as the processes of one run building one cache: all open, all write, all commit.
    AtomicFile first(path, "cache", TemporaryName::per_writer), second(path, "cache", TemporaryName::per_writer);
    CHECK(first.temporary_path() != second.temporary_path());
    CHECK(first.temporary_path().starts_with(path + ".tmp."));
    first.write(bytes);
    second.write(bytes);
    first.commit();
    CHECK(read_text(path) == bytes);
    second.commit();
  }
  CHECK(read_text(path) == bytes);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.file(""))) files += entry.is_regular_file() ? 1 : 0;
  CHECK(files == 1);  // no temporary file left
  // With the one fixed temporary name the second writer's bytes would share the first's file,
  // and its rename would find nothing left to rename.
  AtomicFile first(path, "cache"), second(path, "cache");
  first.write(bytes);
  second.write(bytes);
  first.commit();
  CHECK_THROWS_WITH(second.commit(), doctest::Contains("renaming"));
}

TEST_CASE("durable files: appending rows to several files is all or nothing") {
  testing::TempDir dir("mcdl-durable-append");
  const std::string a = dir.file("metrics.jsonl"), b = dir.file("metrics.csv");
  write_text(a, "{\"epoch\": 0}\n");
  write_text(b, "epoch,loss\n0,1.5\n");
  // a's row fits under the limit, b's does not: a must be taken back too.
  const std::string message = failed_write_message(40, [&] {
    append_to_files({{a, "{\"epoch\": 1}\n"}, {b, "1,1.25000000000000000000000000\n"}});
  });
  CHECK(message.find("appending to " + b) != std::string::npos);
  CHECK(message.find("File too large") != std::string::npos);
  CHECK(read_text(a) == "{\"epoch\": 0}\n");
  CHECK(read_text(b) == "epoch,loss\n0,1.5\n");

  append_to_files({{a, "{\"epoch\": 1}\n"}, {b, "1,1.25\n"}, {dir.file("new.csv"), "x\n"}});
  CHECK(read_text(a) == "{\"epoch\": 0}\n{\"epoch\": 1}\n");
  CHECK(read_text(b) == "epoch,loss\n0,1.5\n1,1.25\n");
  CHECK(read_text(dir.file("new.csv")) == "x\n");
}

TEST_CASE("durable files: the write probe finds a full disk or an unwritable directory") {
  testing::TempDir dir("mcdl-durable-probe");
  const std::string root = dir.file("");
  probe_writable_directory(dir.file("."), "do something");
  CHECK(fs::is_empty(root));  // the probe file is gone

  SUBCASE("a full disk") {
    const std::string message = failed_write_message(1000, [&] { probe_writable_directory(root, "free space"); });
    CHECK(message.find("cannot write to " + root) != std::string::npos);
    CHECK(message.find("File too large") != std::string::npos);
    CHECK(message.find("; free space") != std::string::npos);
    CHECK(fs::is_empty(root));
  }
  SUBCASE("a path below a regular file") {
    write_text(dir.file("plain"), "not a directory");
    CHECK_THROWS_WITH(probe_writable_directory(dir.file("plain"), "choose another"),
                      doctest::Contains(("cannot write to " + dir.file("plain") + ": Not a directory").c_str()));
  }
  // sysfs refuses new files even to root (EACCES, or EROFS where it is mounted read-only).
  SUBCASE("a directory no one may write to") {
    if (!fs::is_directory("/sys/kernel")) {
      MESSAGE("no /sys/kernel here: the unwritable-directory case is not checked");
      return;
    }
    CHECK_THROWS_WITH(probe_writable_directory("/sys/kernel", "choose another"),
                      doctest::Contains("cannot write to /sys/kernel: "));
  }
}
