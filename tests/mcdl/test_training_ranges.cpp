// The training loop's profiler ranges on the emulated CUDA device (kernels/emu/profile_ranges.h
// records them): one SimGCD + MCDL epoch opens every phase's range, and closes each one.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/emu/profile_ranges.h"
#include "mcdl/harness/run.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

// One epoch of `method` on the emulated CUDA device, small enough for the emulator: one block on
// 2 x 2 patches, 16 images scored.
TrainConfig emulated_epoch(const fs::path& data, const fs::path& out, const std::string& method, int64_t batch_size) {
  TrainConfig c = testing::squares_run_config(data, out);
  c.method = parse_method(method);
  c.device = DeviceChoice::cuda;
  c.epochs = 1;
  c.model = "img=16,patch=8,dim=16,depth=1,heads=2,chans=3";
  c.head_hidden = 32;
  c.head_bottleneck = 16;
  c.batch_size = batch_size;
  c.eval_subset = 16;
  return c;
}

// The names the emulator records while `config` trains.
std::vector<std::string> recorded_ranges(const TrainConfig& config, int* still_open = nullptr) {
  const emu::RangeRecording recording;
  run_training(config, false);
  if (still_open) *still_open = recording.open();
  return recording.names();
}

}  // namespace

TEST_CASE("profile ranges: a SimGCD + MCDL epoch on the CUDA device opens a range per phase") {
  const fs::path data = testing::coloured_squares_dataset("ranges-data");
  const fs::path out = fs::temp_directory_path() / ("mcdl-ranges-run-" + std::to_string(::getpid()));
  TrainConfig c = emulated_epoch(data, out, "simgcd+mcdl", 108);  // two batches
  c.mcdl_start = 0;
  c.mu = 1;  // every unlabelled sample seen once is in a bucket: L_sup, L_semi and L_self all run
  int open = -1;
  const std::vector<std::string> names = recorded_ranges(c, &open);
  CHECK(open == 0);
  // The device-to-host read-backs of one training step (from one "batch" range to the next), each
  // a synchronisation on a GPU. One today: the bucket lists with the weak bank's modes (one copy).
  // The loss terms are read every 32 steps (EpochLog), and the index checks of the banks, the row
  // selections and the class targets (cross-entropy, one-hot) are made on the host (HostIndex);
  // this bound keeps it so.
  const auto first_batch = std::find(names.begin(), names.end(), "batch");
  const auto second_batch = std::find(first_batch + 1, names.end(), "batch");
  REQUIRE(second_batch != names.end());
  const auto read_backs = std::count(first_batch, second_batch, "copy_device_to_host");
  MESSAGE("read-backs in one SimGCD + MCDL step: ", read_backs);
  CHECK(read_backs <= 1);
  // Every wait of the host for the device in that step (the emulated runtime marks each): the
  // read-backs' own, and none for the uploads (kernels/cuda/upload_staging.cu), which each waited
  // before they went through page-locked staging memory.
  const auto waits = std::count(first_batch, second_batch, "host_wait");
  MESSAGE("host waits in one SimGCD + MCDL step: ", waits, ", uploads: ",
          std::count(first_batch, second_batch, "copy_host_to_device"));
  CHECK(waits == read_backs);
  // The data phase uploads the batch's images once for its three views (augment_batch_views).
  const auto data_phase_end = std::find(first_batch, second_batch, "forward");
  CHECK(std::count(first_batch, data_phase_end, "upload_images") == 1);
  CHECK(std::count(first_batch, data_phase_end, "augment_images") == 3);
  // The CLS token is expanded over a forward's batch by one kernel (expand), not copied once per
  // image: a step's copies do not grow with its 108 images (each forward has one concat of the
  // expanded CLS rows with the patches, plus the views' concat and the losses' own).
  const auto copies = std::count(first_batch, second_batch, "copy_axis_block");
  MESSAGE("copy kernels in one SimGCD + MCDL step: ", copies);
  CHECK(copies < 30);
  for (const char* phase : {"batch", "forward", "simgcd_losses", "mcdl", "mcdl_banks", "mcdl_buckets", "mcdl_losses",
                            "read_losses", "backward", "optimizer_step", "evaluation", "checkpoint",
                            // and the kernels' own, e.g. the views', the banks' and the optimizer's
                            "augment_images", "bank_update", "sgd_update"}) {
    INFO(phase);
    CHECK(std::find(names.begin(), names.end(), phase) != names.end());
  }
  fs::remove_all(out);
  fs::remove_all(data);
}

TEST_CASE("host waits: an SimGCD step on the CUDA device never waits for it") {
  const fs::path data = testing::coloured_squares_dataset("waits-data");
  const fs::path out = fs::temp_directory_path() / ("mcdl-waits-run-" + std::to_string(::getpid()));
  const std::vector<std::string> names = recorded_ranges(emulated_epoch(data, out, "simgcd", 54));  // four steps
  // The training steps: from one "batch" range to the next, with an optimizer step in between.
  using Position = std::vector<std::string>::const_iterator;
  std::vector<std::pair<Position, Position>> steps;
  Position begin = std::find(names.cbegin(), names.cend(), "batch");
  while (begin != names.cend()) {
    const Position end = std::find(begin + 1, names.cend(), "batch");
    if (std::find(begin, end, "optimizer_step") != end) steps.emplace_back(begin, end);
    begin = end;
  }
  REQUIRE(steps.size() == 4);
  for (size_t step = 0; step < steps.size(); ++step) {
    CAPTURE(step);
    CHECK(std::count(steps[step].first, steps[step].second, "host_wait") == 0);
  }
  fs::remove_all(out);
  fs::remove_all(data);
}
