// ./mcdl_train on a full disk (a child under a file size limit, tests/file_size_limit.h) and in
// run directories that cannot be written even as root: found at the start by the write probe,
// or at a checkpoint, which then stops the run with the last good checkpoint intact and
// resumable once there is room.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/file_size_limit.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"
#include "tests/tool_binary.h"

using namespace mcdl;
using testing::read_text;
namespace fs = std::filesystem;

namespace {

// A tiny SimGCD + MCDL run on the coloured squares, writing to `out`.
std::vector<std::string> tiny_run(const fs::path& out, const std::string& epochs) {
  return {"folder",   "--data-root", testing::coloured_squares_dataset("disk-full").string(),
          "--model",  "img=16,patch=4,dim=32,depth=2,heads=2,chans=3", "--head-hidden", "64", "--head-bottleneck", "32",
          "--num-classes", "6", "--image-size", "16", "--device", "cpu", "--progress", "false", "--workers", "0",
          "--epochs", epochs, "--out", out.string()};
}

fs::path scratch_directory(const std::string& name) {
  const fs::path base = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  return base;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("mcdl_train: a full disk at a checkpoint stops the run, keeps the last checkpoint, and --resume goes on") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_train")), "build ./mcdl_train first (make test does)");
  const fs::path base = scratch_directory("mcdl-disk-full");
  const fs::path whole = base / "whole", full = base / "full";
  // One epoch, copied; then the reference finishes its second epoch with room to spare.
  REQUIRE(testing::run_mcdl_train(RLIM_INFINITY, tiny_run(whole, "1")).status == 0);
  fs::copy(whole, full, fs::copy_options::recursive);
  REQUIRE(testing::run_mcdl_train(RLIM_INFINITY, {"--resume", whole.string(), "--epochs", "2"}).status == 0);

  // The copy's second epoch on a disk that holds half a checkpoint: the smaller files of the
  // epoch (metrics, predictions, features) fit, the checkpoint does not.
  const fs::path checkpoint = full / "checkpoints" / "last.safetensors";
  const std::string good = read_text(checkpoint);
  const rlim_t limit = good.size() / 2;
  REQUIRE(fs::file_size(whole / "features.npy") < limit);
  const testing::ChildOutcome outcome = testing::run_mcdl_train(limit, {"--resume", full.string(), "--epochs", "2"});
  INFO("stderr: ", outcome.err);
  CHECK(outcome.status == 1);
  CHECK(contains(outcome.err, "error: the checkpoint after epoch 2 was not saved, so the run stops"));
  CHECK(contains(outcome.err, "File too large"));
  CHECK(contains(outcome.err, "The last good checkpoint, " + checkpoint.string() + ", is intact"));
  CHECK(contains(outcome.err, "--resume " + full.string()));
  CHECK(read_text(checkpoint) == good);  // untouched, byte for byte
  CHECK_FALSE(fs::exists(checkpoint.string() + ".tmp"));
  // metrics.csv holds whole rows only.
  std::istringstream rows(read_text(full / "metrics.csv"));
  std::string header, row;
  REQUIRE(std::getline(rows, header));
  while (std::getline(rows, row)) CHECK(std::count(row.begin(), row.end(), ',') == std::count(header.begin(), header.end(), ','));

  // With room again, --resume ends where the run without a full disk ended.
  const testing::ChildOutcome resumed = testing::run_mcdl_train(RLIM_INFINITY, {"--resume", full.string()});
  INFO("resumed stderr: ", resumed.err);
  REQUIRE(resumed.status == 0);
  testing::check_same_checkpoints(whole / "checkpoints" / "last.safetensors", checkpoint);
  CHECK(read_text(whole / "predictions.csv") == read_text(full / "predictions.csv"));
  fs::remove_all(base);
}

TEST_CASE("mcdl_train: a full disk or an unwritable run directory is found before any work") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_train")), "build ./mcdl_train first (make test does)");
  const fs::path base = scratch_directory("mcdl-probe");
  const auto expect_refusal = [](const testing::ChildOutcome& outcome, const std::string& says) {
    INFO("stderr: ", outcome.err);
    CHECK(outcome.status == 1);
    CHECK(contains(outcome.err, says));
    CHECK(contains(outcome.err, "--out"));
    CHECK_FALSE(contains(outcome.err, "training images"));  // stopped before the dataset was read
  };
  SUBCASE("a full disk") {
    expect_refusal(testing::run_mcdl_train(1000, tiny_run(base / "run", "1")),
                   "cannot write to " + (base / "run").string() + ": File too large");
    CHECK(fs::is_empty(base / "run"));  // no probe file left behind
  }
  SUBCASE("a run directory below a regular file") {
    std::ofstream(base / "plain") << "not a directory";
    expect_refusal(testing::run_mcdl_train(RLIM_INFINITY, tiny_run(base / "plain" / "run", "1")),
                   "cannot create the run directory " + (base / "plain" / "run").string());
  }
  // sysfs refuses new files even to root (EACCES, or EROFS where it is mounted read-only).
  SUBCASE("a directory no one may write to") {
    if (!fs::is_directory("/sys/kernel")) {
      MESSAGE("no /sys/kernel here: the unwritable-directory case is not checked");
      return;
    }
    expect_refusal(testing::run_mcdl_train(RLIM_INFINITY, tiny_run("/sys/kernel", "1")), "cannot write to /sys/kernel: ");
  }
  fs::remove_all(base);
}
