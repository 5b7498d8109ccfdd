// --eval-on end to end on the coloured squares with a test split (ROOT/test/): the transductive
// and inductive columns, test_predictions.csv, the choice recorded in config.json, a run
// without a test split, the k-means baseline's nearest-centre labels, and runs saved before
// the option (they resume scoring the unlabelled images only).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "mcdl/harness/run.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;
using testing::read_text;

namespace {

constexpr int kTestPerClass = 8;

TrainConfig squares_with_test(const std::string& tag, const std::string& method, const std::string& eval_on) {
  const fs::path dataset = testing::coloured_squares_dataset("inductive", kTestPerClass);
  TrainConfig c = testing::squares_run_config(
      dataset, fs::temp_directory_path() / ("mcdl-inductive-run-" + tag + "-" + std::to_string(::getpid())));
  c.method = parse_method(method);
  set_config_option(c, "eval-on", eval_on);
  c.epochs = 8;
  c.warmup_teacher_epochs = 3;
  return c;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TEST_CASE("inductive: --eval-on auto scores both the unlabelled images and the test split") {
  const TrainConfig config = squares_with_test("both", "simgcd", "auto");
  const RunSummary summary = run_training(config, false);
  // Colour is the class: both protocols are well above chance (1/6), each with its own matching.
  CHECK(summary.accuracy.all > 0.6);
  CHECK(summary.test_accuracy.all > 0.6);
  const fs::path out = config.out;
  const std::string header = first_line(read_text(out / "metrics.csv"));
  CHECK(header.find(",all,old,new,test_all,test_old,test_new,") != std::string::npos);
  CHECK(read_text(out / "config.json").find("\"eval-on\": \"both\"") != std::string::npos);
  const std::string test_csv = read_text(out / "test_predictions.csv");
  CHECK(first_line(test_csv) == "id,prediction,label,old");
  CHECK(std::count(test_csv.begin(), test_csv.end(), '\n') == 1 + testing::kSquareClasses * kTestPerClass);
  CHECK(test_csv.find(",new\n") != std::string::npos);  // the test split has every class
  fs::remove_all(out);
}

TEST_CASE("inductive: --eval-on test skips the unlabelled images; unlabelled never reads the test split") {
  const TrainConfig only_test = squares_with_test("test", "simgcd", "test");
  const RunSummary summary = run_training(only_test, false);
  CHECK(std::isnan(summary.accuracy.all));
  CHECK(summary.test_accuracy.all > 0.6);
  const std::string header = first_line(read_text(fs::path(only_test.out) / "metrics.csv"));
  CHECK(header.find(",test_all,test_old,test_new,") != std::string::npos);
  CHECK(header.find(",all,") == std::string::npos);
  CHECK_FALSE(fs::exists(fs::path(only_test.out) / "predictions.csv"));
  fs::remove_all(only_test.out);

  TrainConfig unlabelled = squares_with_test("unlabelled", "simgcd", "unlabelled");
  unlabelled.epochs = 1;
  const RunSummary plain = run_training(unlabelled, false);
  CHECK(std::isnan(plain.test_accuracy.all));
  CHECK(first_line(read_text(fs::path(unlabelled.out) / "metrics.csv")).find("test_") == std::string::npos);
  fs::remove_all(unlabelled.out);
}

TEST_CASE("inductive: a layout without a test split: auto scores the unlabelled images, test is an error") {
  TrainConfig config = testing::squares_run_config(
      testing::coloured_squares_dataset("inductive-none"),
      fs::temp_directory_path() / ("mcdl-inductive-run-none-" + std::to_string(::getpid())));
  config.method = parse_method("simgcd");
  config.epochs = 1;
  config.eval_on = EvalOn::both;
  CHECK_THROWS_WITH(run_training(config, false), doctest::Contains("has no test split"));
  config.eval_on = EvalOn::automatic;
  run_training(config, false);
  CHECK(read_text(fs::path(config.out) / "config.json").find("\"eval-on\": \"unlabelled\"") != std::string::npos);
  fs::remove_all(config.out);
}

TEST_CASE("inductive: k-means and GCD label each test image with its nearest centre") {
  const TrainConfig kmeans = squares_with_test("kmeans", "kmeans", "auto");
  const RunSummary summary = run_training(kmeans, false);
  CHECK(summary.accuracy.all > 0.6);
  CHECK(summary.test_accuracy.all > 0.6);
  CHECK(first_line(read_text(fs::path(kmeans.out) / "metrics.csv")).find(",test_all,") != std::string::npos);
  fs::remove_all(kmeans.out);

  const fs::path dataset = testing::coloured_squares_dataset("inductive", kTestPerClass);
  const TrainConfig gcd = testing::squares_gcd_config(
      dataset, fs::temp_directory_path() / ("mcdl-inductive-run-gcd-" + std::to_string(::getpid())), "gcd");
  const RunSummary gcd_summary = run_training(gcd, false);
  CHECK(gcd_summary.test_accuracy.all > 0.6);  // the final semi-supervised k-means' centres
  const std::string metrics = read_text(fs::path(gcd.out) / "metrics.csv");
  CHECK(first_line(metrics).find(",all,old,new,test_all,test_old,test_new") != std::string::npos);
  CHECK(metrics.find(",nan,nan,nan,nan,nan,nan,") != std::string::npos);  // epochs before the last: not scored
  CHECK(fs::exists(fs::path(gcd.out) / "test_predictions.csv"));
  fs::remove_all(gcd.out);

  // The clustering methods cluster the unlabelled images: they cannot skip scoring them.
  for (const char* method : {"kmeans", "gcd", "gcd+mcdl"}) {
    TrainConfig only_test = squares_with_test("refused", method, "test");
    CHECK_THROWS_WITH(run_training(only_test, false), doctest::Contains("use --eval-on both"));
  }
}

TEST_CASE("inductive: a run saved before --eval-on resumes scoring the unlabelled images only") {
  TrainConfig config = squares_with_test("old-run", "simgcd", "unlabelled");
  config.epochs = 2;
  config.max_iters = 6;  // one epoch of 6 iterations
  run_training(config, false);
  // What an older version wrote: no "eval-on" key.
  const fs::path saved = fs::path(config.out) / "config.json";
  std::string json = read_text(saved);
  const size_t key = json.find("\"eval-on\"");
  REQUIRE(key != std::string::npos);
  json.erase(json.rfind('\n', key), json.find('\n', key) - json.rfind('\n', key));  // the key's line
  REQUIRE(json.find("eval-on") == std::string::npos);
  std::ofstream(saved) << json;
  TrainConfig resumed = resume_config(config.out);
  CHECK(resumed.eval_on == EvalOn::unlabelled);
  resumed.max_iters = 0;
  run_training(resumed, true);
  const std::string metrics = read_text(fs::path(config.out) / "metrics.csv");
  CHECK(metrics.find("test_") == std::string::npos);
  CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 3);
  fs::remove_all(config.out);
}
