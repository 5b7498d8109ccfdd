// A stop asked for from outside (mcdl/run/stop_request.h: Ctrl-C, SIGTERM) ends every training loop
// after the step in progress, reported as interrupted, without evaluating the cut epoch; the
// command-line behaviour (exit 130, the message, resuming bit for bit) is in
// tests/pipeline/test_kill_resume.cpp.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "mcdl/harness/pretrain.h"
#include "mcdl/run/stop_request.h"
#include "mcdl/harness/run.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

// Clears the request however the test ends: the other tests run in this process.
struct StopRequested {
  StopRequested() { request_stop(); }
  ~StopRequested() { clear_stop_request(); }
};

}  // namespace

TEST_CASE("stop request: each training loop ends after one step, interrupted, with nothing evaluated") {
  const fs::path data = testing::coloured_squares_dataset("stop-data");
  const fs::path base = fs::temp_directory_path() / ("mcdl-stop-" + std::to_string(::getpid()));
  fs::remove_all(base);
  for (const std::string method : {"simgcd+mcdl", "gcd"}) {
    CAPTURE(method);
    TrainConfig c = testing::squares_run_config(data, base / method);
    c.method = parse_method(method);
    c.epochs = 2;
    const StopRequested stop;
    const RunSummary summary = run_training(c, false);
    CHECK(summary.interrupted);
    CHECK(summary.iterations == 1);
    CHECK(summary.epochs_completed == 0);
    CHECK_FALSE(fs::exists(base / method / "metrics.csv"));  // the cut epoch has no row
    CHECK_FALSE(fs::exists(base / method / "checkpoints/last.safetensors"));
  }
  {
    PretrainConfig p;
    p.dataset = "folder";
    p.data_root = data.string();
    p.model = "img=16,patch=4,dim=32,depth=2,heads=2,chans=3";
    p.out = (base / "backbone.safetensors").string();
    p.device = DeviceChoice::cpu;
    p.epochs = 2;
    p.batch_size = 32;
    p.warmup_epochs = 0;
    p.workers = 0;
    p.progress = false;
    const StopRequested stop;
    const RunSummary summary = run_pretraining(p);
    CHECK(summary.interrupted);
    CHECK(summary.iterations == 1);
    CHECK_FALSE(fs::exists(p.out));  // written after whole epochs only
  }
  TrainConfig c = testing::squares_run_config(data, base / "after");
  c.epochs = 1;
  CHECK_FALSE(run_training(c, false).interrupted);  // once cleared, runs go to their end
  fs::remove_all(base);
}

TEST_CASE("stop request during an epoch's last step: the epoch ends as any other, the run is interrupted") {
  // One batch per epoch: the first step is the epoch's last. Before this was handled, the epoch
  // was taken for the run's last: its final report and predictions were written and the run ended
  // as if done.
  const fs::path data = testing::coloured_squares_dataset("stop-data");
  const fs::path out = fs::temp_directory_path() / ("mcdl-stop-last-" + std::to_string(::getpid()));
  TrainConfig c = testing::squares_run_config(data, out);
  c.method = parse_method("simgcd+mcdl");
  c.epochs = 3;
  c.batch_size = 216;  // the whole training set
  RunSummary summary;
  {
    const StopRequested stop;
    summary = run_training(c, false);
  }
  CHECK(summary.interrupted);
  CHECK(summary.iterations == 1);
  CHECK(summary.epochs_completed == 1);
  CHECK(fs::exists(out / "checkpoints/last.safetensors"));
  CHECK_FALSE(fs::exists(out / "predictions.csv"));  // written at the run's end only
  fs::remove_all(out);
}

