// MCDL on the GCD baseline (--method gcd+mcdl, mcdl/method/mcdl.h and mcdl/method/gcd.h): the method's options, an
// end-to-end run on the coloured squares (GCD's columns plus MCDL's terms and buckets, the banks
// and the classifier's centres in the checkpoint, learning well above chance), and a resumed run
// that equals the uninterrupted one bit for bit.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "io/safetensors.h"
#include "mcdl/run/train_config.h"
#include "mcdl/harness/run.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

fs::path make_folder_dataset() { return testing::coloured_squares_dataset("gcd-mcdl-data"); }

// The GCD baseline's tiny run (tests/mcdl/test_gcd_baseline.cpp) with MCDL, 6 epochs: μ = 2, its
// losses from epoch 2 at full weight.
TrainConfig tiny_config(const fs::path& out) {
  TrainConfig c = testing::squares_gcd_config(make_folder_dataset(), out, "gcd+mcdl");
  c.epochs = 6;
  c.mu = 2;
  c.mcdl_start = 2;
  c.mcdl_ramp = 0;
  return c;
}

}  // namespace

TEST_CASE("gcd+mcdl options: the method parses, GCD's k-means defaults, MCDL's variant, --val-classes refused") {
  CHECK(parse_method("gcd+mcdl") == Method::gcd_mcdl);
  CHECK(is_gcd_method(Method::gcd_mcdl));
  CHECK(is_gcd_method(Method::gcd));
  CHECK_FALSE(is_gcd_method(Method::simgcd_mcdl));
  CHECK_THROWS_WITH(parse_method("mcdl+gcd"), doctest::Contains("simgcd, simgcd+mcdl, kmeans, gcd or gcd+mcdl"));
  TrainConfig c;
  c.method = parse_method("gcd+mcdl");
  CHECK_NOTHROW(validate_config(c));
  CHECK(resolve_defaults(c).kmeans_restarts == 100);
  CHECK(resolve_defaults(c).kmeans_iters == 200);
  c.val_classes = 2;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--val-classes: the gcd+mcdl method does not score"));
}

TEST_CASE("e2e: --method gcd+mcdl on coloured squares: GCD's columns, MCDL's terms and buckets, banks in the checkpoint") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-gcd-mcdl-run-" + std::to_string(::getpid()));
  testing::check_learnt_squares(run_training(tiny_config(out), false), 6);
  const std::string csv = testing::read_text(out / "metrics.csv");
  CHECK(csv.find("epoch,lr,loss,contrastive,supcon,l_sup,l_semi,l_self,iterations,all,old,new,high,medium,low,"
                 "high_pseudo_acc,medium_pseudo_acc,high_conf_acc,medium_conf_acc,high_clusters,high_top_share,"
                 "high_old_share,bank_full,labelled_weak_acc,labelled_strong_acc,train_seconds,eval_seconds,"
                 "eval_features_seconds,eval_cluster_seconds,eval_report_seconds,seconds\n") == 0);
  const auto col = testing::metrics_columns(csv);
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
  // The k-means classifier fixes the labelled images to their classes: the first weak view of a
  // labelled sample is mostly predicted as its label by the end (the strong view less often).
  CHECK(std::stod(col.at("labelled_weak_acc")[5]) > 0.8);
  CHECK(std::stod(col.at("labelled_strong_acc")[5]) >= 0.0);
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
  TrainConfig config = tiny_config(fs::temp_directory_path() / "unused");
  config.epochs = 3;
  config.mcdl_start = 1;
  // Epoch 1 (6 iterations) is checkpointed, the 2 of epoch 2 are not.
  testing::check_resume_matches_whole_run(
      config, fs::temp_directory_path() / ("mcdl-gcd-mcdl-resume-" + std::to_string(::getpid())), 8);
  fs::remove_all(make_folder_dataset());
}
