// --shards on whole runs of the coloured squares: SimGCD + MCDL and GCD + MCDL train through the
// shards to the unsharded run's losses within float rounding (the double-precision proof that
// the statistics stay global is tests/mcdl/test_sharded_step.cpp), config.json records the
// setting, a sharded run resumed mid-way equals the uninterrupted one bit for bit, and a shard
// count that does not divide the batch is refused with the fix.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "mcdl/harness/run.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

TrainConfig sharded_config(Method method, const fs::path& out) {
  const fs::path dataset = testing::coloured_squares_dataset("shards");
  TrainConfig c = method == Method::gcd_mcdl ? testing::squares_gcd_config(dataset, out, "gcd+mcdl")
                                             : testing::squares_run_config(dataset, out);
  c.method = method;
  c.epochs = 2;
  c.mu = 1;
  c.mcdl_start = 0;
  c.warmup_teacher_epochs = 1;
  return c;
}

}  // namespace

TEST_CASE("shards: a run through 4 shards follows the unsharded run's losses; config.json records the count") {
  for (Method method : {Method::simgcd_mcdl, Method::gcd_mcdl}) {
    const fs::path base = fs::temp_directory_path() / ("mcdl-shards-run-" + std::to_string(::getpid()));
    TrainConfig config = sharded_config(method, base / "whole");
    run_training(config, false);
    config.shards = 4;
    config.out = (base / "sharded").string();
    run_training(config, false);
    const auto whole = testing::metrics_columns(testing::read_text(base / "whole" / "metrics.csv"));
    const auto sharded = testing::metrics_columns(testing::read_text(base / "sharded" / "metrics.csv"));
    for (const std::string column : {"loss", "l_sup", "l_semi", "l_self"}) {
      CAPTURE(column);
      // The first epoch's mean loss: 4 steps apart from the whole run only by float rounding.
      const double a = std::stod(whole.at(column)[0]), b = std::stod(sharded.at(column)[0]);
      CHECK(std::abs(a - b) <= 1e-3 * std::max(1.0, std::abs(a)));
    }
    CHECK(testing::read_text(base / "sharded" / "config.json").find("\"shards\": 4,") != std::string::npos);
    CHECK(testing::read_text(base / "whole" / "config.json").find("\"shards\": \"off\"") != std::string::npos);
    fs::remove_all(base);
  }
}

TEST_CASE("shards: a sharded run resumed mid-way equals the uninterrupted run bit for bit") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-shards-resume-" + std::to_string(::getpid()));
  TrainConfig config = sharded_config(Method::simgcd_mcdl, base / "unused");
  config.shards = 2;
  testing::check_resume_matches_whole_run(config, base, 8);  // 6 steps per epoch: stopped inside the second
}

TEST_CASE("shards: the count must divide the batch") {
  TrainConfig c;
  c.batch_size = 32;
  c.shards = 3;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--shards 3 does not divide --batch-size 32"));
  c.shards = 0;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--shards must be off or at least 1"));
  c.shards = 8;
  CHECK_NOTHROW(validate_config(c));
  set_config_option(c, "shards", "off");
  CHECK_FALSE(c.shards.has_value());
  CHECK_THROWS_WITH(set_config_option(c, "shards", "two"), doctest::Contains("--shards"));
}

TEST_CASE("batch stats local: one shard is the global step bit for bit; two shards compute their statistics apart") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-local-stats-" + std::to_string(::getpid()));
  const auto run_into = [&](const std::string& name, int64_t shards, BatchStats stats) {
    TrainConfig config = sharded_config(Method::simgcd_mcdl, base / name);
    config.shards = shards;
    config.batch_stats = stats;
    run_training(config, false);
    return base / name;
  };
  const fs::path global1 = run_into("global1", 1, BatchStats::global),
                 local1 = run_into("local1", 1, BatchStats::local);
  testing::check_same_checkpoints(global1 / "checkpoints/last.safetensors", local1 / "checkpoints/last.safetensors");
  CHECK(testing::metrics_without_timing(global1 / "metrics.csv") ==
        testing::metrics_without_timing(local1 / "metrics.csv"));

  const fs::path global2 = run_into("global2", 2, BatchStats::global),
                 local2 = run_into("local2", 2, BatchStats::local);
  const auto g = testing::metrics_columns(testing::read_text(global2 / "metrics.csv"));
  const auto l = testing::metrics_columns(testing::read_text(local2 / "metrics.csv"));
  // The mean-entropy term over each shard's 16 rows is another number than over the batch's 32:
  // a per-shard statistic, far beyond float rounding.
  const double memax_global = std::stod(g.at("memax")[0]), memax_local = std::stod(l.at("memax")[0]);
  CHECK(std::abs(memax_global - memax_local) > 1e-3);
  CHECK(testing::read_text(local2 / "config.json").find("\"batch-stats\": \"local\"") != std::string::npos);
  fs::remove_all(base);
}

TEST_CASE("batch stats local: needs a shard count") {
  TrainConfig c;
  c.batch_stats = BatchStats::local;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--batch-stats local computes each shard's losses alone"));
  c.shards = 4;
  CHECK_NOTHROW(validate_config(c));
  CHECK_THROWS_WITH(set_config_option(c, "batch-stats", "per-gpu"), doctest::Contains("expected global or local"));
}
