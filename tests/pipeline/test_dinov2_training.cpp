// Training with a DINOv2-style backbone (LayerScale, two register tokens, the position embedding
// stored at a 6x6 grid and interpolated to the 4x4 patches of the 16 px squares): SimGCD + MCDL
// learns the coloured squares and so does GCD + MCDL; the frozen block in bf16 on the emulated
// CUDA device trains as in fp32; a resume equals the uninterrupted run with the first block
// (and the registers) frozen; ./mcdl_features and ./mcdl_predict read the run's checkpoint.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "io/npy.h"
#include "mcdl/harness/run.h"
#include "mcdl/run/trained_model.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"
#include "tests/tool_binary.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

TrainConfig dinov2_squares_config(const fs::path& out) {
  TrainConfig c = testing::squares_run_config(testing::coloured_squares_dataset("dinov2"), out);
  c.model = "img=16,patch=4,dim=32,depth=2,heads=2,chans=3,layer_scale=true,registers=2,pos_img=24";
  c.method = parse_method("simgcd+mcdl");
  c.mu = 4;
  c.warmup_teacher_epochs = 6;
  return c;
}

}  // namespace

TEST_CASE(
    "dinov2 e2e: SimGCD + MCDL with a DINOv2-style backbone learns the squares; mcdl_features and mcdl_predict read "
    "the run") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-dinov2-run-" + std::to_string(::getpid()));
  TrainConfig c = dinov2_squares_config(out);
  c.epochs = 20;
  c.mcdl_start = 4;
  const RunSummary summary = run_training(c, false);
  CHECK(summary.epochs_completed == 20);
  MESSAGE("SimGCD + MCDL, DINOv2-style backbone: all ", summary.accuracy.all, ", old ", summary.accuracy.old_classes,
          ", new ", summary.accuracy.new_classes);
  CHECK(summary.accuracy.all > 0.6);  // chance is 1/6
  CHECK(summary.accuracy.new_classes > 0.4);

  const VisionTransformer backbone = load_checkpoint_backbone(out.string());
  CHECK(backbone.config().num_registers == 2);
  CHECK(backbone.config().layer_scale);
  CHECK(backbone.config().pos_grid_size() == 6);

  const std::string tool = testing::tool_binary("mcdl_features");
  REQUIRE_MESSAGE(fs::exists(tool), "build ./mcdl_features first (make test does)");
  const std::string command = "OMP_NUM_THREADS=2 " + tool + " --checkpoint " + out.string() + " --device cpu " +
                              c.data_root + " -o " + (out / "features.npy").string() + " > " +
                              (out / "features.log").string() + " 2>&1";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  INFO(testing::read_text(out / "features.log"));
  REQUIRE(WEXITSTATUS(status) == 0);
  const Tensor features = read_npy((out / "features.npy").string());
  CHECK(features.shape() ==
        Shape{testing::kSquareClasses * testing::kSquaresPerClass, 32});  // every image, the CLS width

  // ./mcdl_predict: the run's SimGCD model on the unlabelled images, one row each.
  const std::string predict = testing::tool_binary("mcdl_predict") + " --checkpoint " + out.string() + " " +
                              (fs::path(c.data_root) / "unlabelled").string() + " --device cpu -o " +
                              (out / "predictions_again.csv").string() + " > " + (out / "predict.log").string() +
                              " 2>&1";
  const int predicted = std::system(predict.c_str());
  REQUIRE(WIFEXITED(predicted));
  INFO(testing::read_text(out / "predict.log"));
  REQUIRE(WEXITSTATUS(predicted) == 0);
  const std::string rows = testing::read_text(out / "predictions_again.csv");
  CHECK(std::count(rows.begin(), rows.end(), '\n') == 1 + testing::kSquareClasses * testing::kSquaresPerClass -
                                                          testing::kSquareOldClasses * testing::kSquaresPerClass / 2);
  fs::remove_all(out);
}

TEST_CASE("dinov2 e2e: GCD + MCDL (contrastive training, k-means) with a DINOv2-style backbone") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-dinov2-gcd-" + std::to_string(::getpid()));
  TrainConfig c = testing::squares_gcd_config(testing::coloured_squares_dataset("dinov2"), out, "gcd+mcdl");
  c.model = dinov2_squares_config(out).model;
  c.mcdl_start = 2;
  c.mu = 4;
  const RunSummary summary = run_training(c, false);
  MESSAGE("GCD + MCDL, DINOv2-style backbone: all ", summary.accuracy.all);
  CHECK(summary.epochs_completed == c.epochs);
  CHECK(summary.accuracy.all > 0.5);  // chance is 1/6
  fs::remove_all(out);
}

TEST_CASE("dinov2 e2e: on the emulated CUDA device the frozen LayerScale block in bf16 trains as in fp32") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-dinov2-bf16-" + std::to_string(::getpid()));
  auto first_loss = [&](MatmulPrecision precision, const std::string& name) {
    TrainConfig c = dinov2_squares_config(base / name);
    set_config_option(c, "device", "cuda");
    c.precision = precision;
    c.grad_from_block = 1;  // block 0 (with its LayerScale gains) frozen: in bf16 it runs Block::forward_bf16
    c.epochs = 1;
    c.mcdl_start = 1;
    run_training(c, false);
    return std::stod(testing::metrics_columns(testing::read_text(base / name / "metrics.csv")).at("loss").at(0));
  };
  const double fp32 = first_loss(MatmulPrecision::fp32, "fp32"), bf16 = first_loss(MatmulPrecision::bf16, "bf16");
  MESSAGE("first epoch's loss on the emulated CUDA device: fp32 ", fp32, ", bf16 ", bf16);
  CHECK(std::isfinite(bf16));
  CHECK(bf16 == doctest::Approx(fp32).epsilon(2e-2));
  fs::remove_all(base);
}

TEST_CASE("dinov2 e2e: a resume with the first block and the registers frozen equals the whole run") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-dinov2-resume-" + std::to_string(::getpid()));
  TrainConfig c = dinov2_squares_config(base);
  c.epochs = 4;
  c.mcdl_start = 2;
  c.grad_from_block = 1;  // block 0, the registers and the position embedding frozen (the fingerprinted part)
  testing::check_resume_matches_whole_run(c, base, 14);
}
