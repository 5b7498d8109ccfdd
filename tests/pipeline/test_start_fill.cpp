// --mcdl-start-fill on a tiny run of the coloured squares: MCDL's losses stay off until the first
// epoch whose start finds the share of unlabelled images with a full weak window (the previous
// row's bank_full) at the threshold, and are on from then; the start is checkpointed, so a run
// resumed after it equals the uninterrupted one bit for bit.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "mcdl/harness/run.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

// 6 epochs of 6 iterations, μ = 3; the losses may start from epoch 1 once 40% of the windows are
// full, and ramp over 3 epochs.
TrainConfig fill_config(const fs::path& out) {
  TrainConfig c = testing::squares_run_config(testing::coloured_squares_dataset("fill"), out);
  c.method = Method::simgcd_mcdl;
  c.epochs = 6;
  c.mu = 3;
  c.mcdl_start = 1;
  c.mcdl_ramp = 3;  // so that a resumed run that lost the start would weigh the losses differently
  c.warmup_teacher_epochs = 2;
  c.mcdl_start_fill = 0.4;
  return c;
}

}  // namespace

TEST_CASE("mcdl start fill: the losses start at the first epoch whose start finds the banks full enough") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-start-fill-run-" + std::to_string(::getpid()));
  run_training(fill_config(out), false);
  const auto col = testing::metrics_columns(testing::read_text(out / "metrics.csv"));
  const std::vector<std::string>& full = col.at("bank_full");
  const std::vector<std::string>& l_sup = col.at("l_sup");
  REQUIRE(full.size() == 6);
  int64_t started = -1;
  for (int64_t e = 1; e < 6 && started < 0; ++e)
    if (std::stod(full[static_cast<size_t>(e - 1)]) >= 0.4) started = e;
  INFO("bank_full per epoch: " << full[0] << " " << full[1] << " " << full[2] << " " << full[3]);
  // The threshold is crossed after the first epoch, so the fill (not --mcdl-start) sets the start.
  REQUIRE(started > 1);
  REQUIRE(started < 6);
  for (int64_t e = 0; e < 6; ++e) {
    INFO("epoch " << e);
    CHECK((std::stod(l_sup[static_cast<size_t>(e)]) > 0) == (e >= started));
  }
  fs::remove_all(out);
}

TEST_CASE("mcdl start fill: a run resumed after the start equals the uninterrupted run bit for bit") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-start-fill-resume-" + std::to_string(::getpid()));
  // 6 iterations per epoch: stopped inside epoch 5, resumed from the end of epoch 4, after the
  // losses started (at epoch 4 on this run: the previous test prints the fills).
  testing::check_resume_matches_whole_run(fill_config(base / "unused"), base, 33);
}

TEST_CASE("mcdl start fill: the range is checked, auto is 0 in both variants") {
  TrainConfig c;
  c.dataset = "fmnist";
  CHECK(resolve_defaults(c).mcdl_start_fill == 0.0);
  c.mcdl_variant = McdlVariant::paper;
  CHECK(resolve_defaults(c).mcdl_start_fill == 0.0);
  c.mcdl_start_fill = 1.5;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--mcdl-start-fill must be in [0, 1]"));
}
