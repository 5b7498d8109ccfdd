// MCDL on the GCD baseline (--method gcd+mcdl, mcdl/gcd_mcdl.h): the method's options, an
// end-to-end run on the coloured squares (GCD's columns plus MCDL's terms and buckets, the banks
// and the classifier's centres in the checkpoint, learning well above chance), and a resumed run
// that equals the uninterrupted one bit for bit.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "io/safetensors.h"
#include "mcdl/train_config.h"
#include "mcdl/trainer.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

fs::path make_folder_dataset() { return testing::coloured_squares_dataset("gcd-mcdl-data"); }

// The GCD baseline's tiny run (tests/mcdl/test_gcd_baseline.cpp) with MCDL: μ = 2, its losses
// from epoch 2 at full weight.
TrainConfig tiny_config(const fs::path& out) {
  TrainConfig c = testing::squares_run_config(make_folder_dataset(), out);
  c.gcd_head_out = 256;
  c.method = "gcd+mcdl";
  c.epochs = 6;
  c.kmeans_restarts = 10;
  c.mu = 2;
  c.mcdl_start = 2;
  c.mcdl_ramp = 0;
  return c;
}

// The rows of metrics.csv as column name → values.
std::map<std::string, std::vector<std::string>> columns(const std::string& csv) {
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  std::vector<std::string> names;
  std::istringstream head(header);
  for (std::string name; std::getline(head, name, ',');) names.push_back(name);
  std::map<std::string, std::vector<std::string>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream cells(line);
    std::string cell;
    for (size_t c = 0; std::getline(cells, cell, ','); ++c) out[names.at(c)].push_back(cell);
  }
  return out;
}

}  // namespace

TEST_CASE("gcd+mcdl options: the method parses, GCD's k-means defaults, MCDL's variant, --val-classes refused") {
  CHECK(parse_method("gcd+mcdl") == Method::gcd_mcdl);
  CHECK(is_gcd_method(Method::gcd_mcdl));
  CHECK(is_gcd_method(Method::gcd));
  CHECK_FALSE(is_gcd_method(Method::simgcd_mcdl));
  CHECK_THROWS_WITH(parse_method("mcdl+gcd"), doctest::Contains("simgcd, simgcd+mcdl, kmeans, gcd or gcd+mcdl"));
  TrainConfig c;
  c.method = "gcd+mcdl";
  CHECK_NOTHROW(validate_config(c));
  CHECK(effective_kmeans_restarts(c) == 100);
  CHECK(effective_kmeans_iters(c) == 200);
  c.val_classes = 2;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--val-classes: the gcd+mcdl method does not score"));
}

TEST_CASE("e2e: --method gcd+mcdl on coloured squares: GCD's columns, MCDL's terms and buckets, banks in the checkpoint") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-gcd-mcdl-run-" + std::to_string(::getpid()));
  const RunSummary summary = run_training(tiny_config(out), false);
  CHECK(summary.epochs_completed == 6);
  CHECK(summary.iterations == 6 * 6);  // 216 images at batch 32
  CHECK(summary.accuracy.all > 0.6);    // chance is 1/6
  CHECK(summary.accuracy.new_classes > 0.4);
  const std::string csv = testing::read_text(out / "metrics.csv");
  CHECK(csv.find("epoch,lr,loss,contrastive,supcon,l_sup,l_semi,l_self,iterations,all,old,new,high,medium,low,"
                 "high_pseudo_acc,medium_pseudo_acc,seconds\n") == 0);
  const auto col = columns(csv);
  REQUIRE(col.at("epoch").size() == 6);
  for (size_t e = 0; e < 6; ++e) {
    INFO("epoch " << e);
    // Before --mcdl-start the banks fill but no MCDL loss trains; from it on L_self always has
    // unlabelled samples, and with μ = 2 some are high-credibility.
    CHECK((std::stod(col.at("l_self")[e]) > 0) == (e >= 2));
    if (e < 2) CHECK(std::stod(col.at("l_sup")[e]) == 0.0);
    const double buckets = std::stod(col.at("high")[e]) + std::stod(col.at("medium")[e]) + std::stod(col.at("low")[e]);
    CHECK(buckets == 162.0);  // the unlabelled images
    CHECK((col.at("all")[e] == "nan") == (e < 5));  // GCD scores the last epoch only
  }
  CHECK(std::stod(col.at("high")[5]) > 0);
  CHECK(std::stod(col.at("l_sup")[5]) > 0);
  CHECK(std::stod(col.at("l_semi")[5]) > 0);
  const SafetensorsFile checkpoint = load_safetensors((out / "checkpoints/last.safetensors").string());
  for (const char* name : {"bank_weak.probs", "bank_strong.classes", "classifier.centres",
                           "projection_head.last_layer.weight_v", "model.blocks.1.attn.qkv.weight"})
    CHECK(checkpoint.tensors.count(name) == 1);
  CHECK(checkpoint.tensors.at("classifier.centres").shape() == Shape{testing::kSquareClasses, 32});
  CHECK(testing::read_text(out / "config.json").find("\"mcdl-ramp\": 0") != std::string::npos);
  fs::remove_all(out);
  fs::remove_all(make_folder_dataset());
}

TEST_CASE("e2e: a resumed --method gcd+mcdl run equals the uninterrupted run bit for bit (CPU)") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-gcd-mcdl-resume-" + std::to_string(::getpid()));
  TrainConfig whole = tiny_config(base / "whole");
  whole.epochs = 3;
  whole.mcdl_start = 1;
  run_training(whole, false);

  TrainConfig first = tiny_config(base / "parts");
  first.epochs = 3;
  first.mcdl_start = 1;
  first.max_iters = 8;  // epoch 1 (6 iterations) is checkpointed, the 2 of epoch 2 are not
  run_training(first, false);
  TrainConfig resumed = resume_config(first.out);
  resumed.max_iters = 0;
  CHECK(run_training(resumed, true).epochs_completed == 3);

  const SafetensorsFile a = load_safetensors((base / "whole/checkpoints/last.safetensors").string());
  const SafetensorsFile b = load_safetensors((base / "parts/checkpoints/last.safetensors").string());
  REQUIRE(a.tensors.size() == b.tensors.size());
  CHECK(a.tensors.count("classifier.centres") == 1);
  for (const auto& [name, t] : a.tensors) {
    INFO(name);
    REQUIRE(b.tensors.count(name) == 1);
    const Tensor& u = b.tensors.at(name);
    REQUIRE(t.dtype() == u.dtype());
    REQUIRE(t.shape() == u.shape());
    CHECK(std::memcmp(t.raw_data(), u.raw_data(), t.nbytes()) == 0);
  }
  // Every metrics column but the timing, epoch by epoch, and the predictions.
  auto without_seconds = [](const std::string& csv) {
    auto col = columns(csv);
    col.erase("seconds");
    return col;
  };
  CHECK(without_seconds(testing::read_text(base / "whole/metrics.csv")) ==
        without_seconds(testing::read_text(base / "parts/metrics.csv")));
  CHECK(testing::read_text(base / "whole/predictions.csv") == testing::read_text(base / "parts/predictions.csv"));
  fs::remove_all(base);
  fs::remove_all(make_folder_dataset());
}
