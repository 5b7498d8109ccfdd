// End to end: ./mcdl_train's run on a tiny synthetic dataset in the folder layout (coloured
// squares drawn by the test; the colour is the class), on the CPU backend and through the
// emulated CUDA kernels; resume equals the uninterrupted run; bad input ends in clear errors.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "data/decode.h"
#include "engine/random.h"
#include "engine/settings.h"
#include "io/safetensors.h"
#include "kernels/emu/profile_ranges.h"
#include "kernels/emu/runtime_api.h"
#include "layers/backbone_file.h"
#include "layers/frozen_graphs.h"
#include "mcdl/harness/run.h"
#include "mcdl/run/training_data.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

constexpr int kClasses = testing::kSquareClasses, kSize = testing::kSquareImageSize;

fs::path make_folder_dataset() { return testing::coloured_squares_dataset("e2e"); }

TrainConfig tiny_config(const fs::path& out, const std::string& method) {
  TrainConfig c = testing::squares_run_config(make_folder_dataset(), out);
  c.method = parse_method(method);
  c.epochs = 20;
  c.mu = 4;
  c.mcdl_start = 4;
  c.warmup_teacher_epochs = 6;
  return c;
}

using testing::read_text;

}  // namespace

TEST_CASE("e2e: SimGCD + MCDL on coloured squares learns the classes, old and new, on the CPU") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-e2e-run-" + std::to_string(::getpid()));
  const RunSummary summary = run_training(tiny_config(out, "simgcd+mcdl"), false);
  // Chance is 1/6; the colour makes the classes easy to separate.
  CHECK(summary.accuracy.all > 0.6);
  CHECK(summary.accuracy.new_classes > 0.4);
  CHECK(summary.epochs_completed == 20);
  for (const char* file : {"config.json", "split.csv", "metrics.jsonl", "metrics.csv", "predictions.csv",
                           "checkpoints/last.safetensors"})
    CHECK(fs::exists(out / file));
  const std::string csv = read_text(out / "metrics.csv");
  CHECK(csv.find("epoch,lr,loss,cls,cluster,memax,contrastive,supcon,l_sup,l_semi,l_self") == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 21);
  CHECK(csv.find(",high,medium,low,high_pseudo_acc,medium_pseudo_acc,high_conf_acc,medium_conf_acc,high_clusters,"
                 "high_top_share,high_old_share,bank_full,labelled_weak_acc,labelled_strong_acc,") != std::string::npos);
  // The premise columns are filled: the classifier predicts the labelled rows' labels once trained.
  const auto col = testing::metrics_columns(csv);
  CHECK(std::stod(col.at("labelled_weak_acc").back()) > 0.8);
  CHECK(std::stod(col.at("high_clusters").back()) >= 1.0);
  fs::remove_all(out);
}

TEST_CASE("e2e: metrics.csv splits eval_seconds into the model's forward, the clustering and the rest") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-e2e-eval-phases-" + std::to_string(::getpid()));
  TrainConfig c = tiny_config(out, "simgcd");
  c.epochs = 3;
  c.eval_every = 2;  // the second and the last epoch are scored, the first is not
  run_training(c, false);
  const std::string csv = read_text(out / "metrics.csv");
  CHECK(csv.find(",train_seconds,eval_seconds,eval_features_seconds,eval_cluster_seconds,eval_report_seconds,"
                 "seconds\n") != std::string::npos);
  const auto col = testing::metrics_columns(csv);
  REQUIRE(col.at("eval_seconds").size() == 3);
  for (size_t e = 0; e < 3; ++e) {
    INFO("epoch ", e + 1);
    auto seconds = [&](const char* name) { return std::stod(col.at(name)[e]); };
    const double features = seconds("eval_features_seconds"), cluster = seconds("eval_cluster_seconds"),
                 report = seconds("eval_report_seconds");
    CHECK((features > 0) == (e > 0));  // nothing scored: 0
    CHECK((cluster > 0) == (e > 0));
    CHECK(report >= 0);
    CHECK(features + cluster + report <= seconds("eval_seconds") * (1 + 1e-6));  // metrics.csv keeps 8 digits
  }
  fs::remove_all(out);
}

TEST_CASE("e2e: a run resumed from its checkpoint equals the uninterrupted run bit for bit (CPU)") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-e2e-resume-" + std::to_string(::getpid()));
  TrainConfig whole = tiny_config(base / "whole", "simgcd+mcdl");
  whole.epochs = 4;
  whole.mcdl_start = 2;
  run_training(whole, false);

  TrainConfig first = tiny_config(base / "parts", "simgcd+mcdl");
  first.epochs = 4;
  first.mcdl_start = 2;
  // 216 training images at batch 32: 6 iterations per epoch; stop after epoch 2 (and, with a
  // budget that ends mid-epoch 3, show that the partial epoch is not checkpointed).
  first.max_iters = 14;
  run_training(first, false);
  TrainConfig resumed = resume_config(first.out);
  CHECK(resumed.epochs == 4);
  resumed.max_iters = 0;
  run_training(resumed, true);

  testing::check_same_checkpoints(base / "whole/checkpoints/last.safetensors",
                                  base / "parts/checkpoints/last.safetensors");
  // The metrics of the resumed run: epochs 0..3 once each, the accuracies equal.
  const std::string parts_csv = read_text(base / "parts/metrics.csv");
  CHECK(std::count(parts_csv.begin(), parts_csv.end(), '\n') == 5);
  CHECK(testing::metrics_without_timing(base / "whole/metrics.csv") ==
        testing::metrics_without_timing(base / "parts/metrics.csv"));
  CHECK(read_text(base / "whole/predictions.csv") == read_text(base / "parts/predictions.csv"));
  fs::remove_all(base);
}

TEST_CASE("e2e: checkpoints leave the frozen blocks out; a resume on other frozen weights is refused") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-e2e-frozen-" + std::to_string(::getpid()));
  TrainConfig c = tiny_config(base / "run", "simgcd");
  c.epochs = 2;
  c.grad_from_block = 1;  // block 0 frozen, block 1 trained (as SimGCD's blocks 0-10 and 11)
  c.max_iters = 6;  // one epoch, checkpointed
  run_training(c, false);
  const SafetensorsFile file = load_safetensors((base / "run/checkpoints/last.safetensors").string());
  CHECK(file.metadata.count("frozen_backbone") == 1);
  bool frozen_block = false, trained_block = false;
  for (const auto& [name, t] : file.tensors) {
    frozen_block |= name.rfind("model.blocks.0.", 0) == 0 || name == "model.pos_embed";
    trained_block |= name.rfind("model.blocks.", 0) == 0 && name.rfind("model.blocks.0.", 0) != 0;
  }
  CHECK_FALSE(frozen_block);
  CHECK(trained_block);
  // --precision auto is recorded as what it resolved to: fp32 on the CPU.
  CHECK(config_from_json_file((base / "run/config.json").string()).precision == MatmulPrecision::fp32);

  // Other frozen weights (here: another seed's initialisation of the --model backbone).
  TrainConfig resumed = resume_config(c.out);
  resumed.max_iters = 0;
  resumed.seed += 1;
  CHECK_THROWS_WITH(run_training(resumed, true), doctest::Contains("was trained on other frozen backbone weights"));
  fs::remove_all(base);
}

TEST_CASE("e2e: --clusters sets the head's size, auto estimates it from the labelled images") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-e2e-clusters-" + std::to_string(::getpid()));
  TrainConfig c = tiny_config(base / "eight", "simgcd");
  c.epochs = 2;
  c.clusters = 8;  // more clusters than the 6 classes: scored by the Hungarian match all the same
  const RunSummary eight = run_training(c, false);
  CHECK(eight.accuracy.all > 0.0);
  const SafetensorsFile file = load_safetensors((base / "eight/checkpoints/last.safetensors").string());
  CHECK(file.tensors.at("model.head.last_layer.weight_v").size(0) == 8);

  c = tiny_config(base / "auto", "simgcd");
  c.epochs = 1;
  set_config_option(c, "num-classes", "auto");
  CHECK(c.estimate_clusters);
  run_training(c, false);
  const int64_t estimated = config_from_json_file((base / "auto/config.json").string()).clusters.value();
  CHECK(estimated >= testing::kSquareOldClasses);  // recorded, at least the labelled classes

  c = tiny_config(base / "two", "simgcd");
  c.clusters = 2;
  CHECK_THROWS_WITH(run_training(c, false), doctest::Contains("fewer than the 3 labelled classes"));
  fs::remove_all(base);
}

TEST_CASE("e2e: the emulated CUDA backend trains the same run as the CPU backend") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-e2e-cuda-" + std::to_string(::getpid()));
  auto run = [&](const std::string& device) {
    TrainConfig c = tiny_config(base / device, "simgcd+mcdl");
    set_config_option(c, "device", device);
    c.precision = MatmulPrecision::fp32;  // the backends compared at one precision ("auto" is bf16 on a CUDA device)
    c.epochs = 2;
    c.mcdl_start = 1;
    c.mu = 1;  // every unlabelled sample seen once is in a bucket: L_sup, L_semi and L_self all run
    c.max_iters = 8;  // 216 images at batch 32: 6 iterations in epoch 1, then 2 of epoch 2
    c.batch_size = 32;
    return run_training(c, false);
  };
  const RunSummary cpu = run("cpu"), cuda = run("cuda");
  CHECK(cpu.iterations == 8);
  CHECK(cuda.iterations == 8);
  std::istringstream a(read_text(base / "cpu/metrics.csv")), b(read_text(base / "cuda/metrics.csv"));
  std::string header_a, header_b, row_a, row_b;
  std::getline(a, header_a);
  std::getline(b, header_b);
  CHECK(header_a == header_b);
  // Every loss term of both epochs within float tolerance of the CPU's (reductions differ in order).
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::getline(a, row_a);
    std::getline(b, row_b);
    std::istringstream ca(row_a), cb(row_b), names(header_a);
    for (std::string x, y, name; std::getline(ca, x, ',') && std::getline(cb, y, ',') && std::getline(names, name, ',');) {
      if (name.ends_with("seconds")) continue;  // the timing columns
      INFO(name, " epoch ", epoch);
      const double vx = std::stod(x), vy = std::stod(y);
      if (std::isnan(vx)) CHECK(std::isnan(vy));
      else CHECK(vy == doctest::Approx(vx).epsilon(2e-3));
    }
  }
  fs::remove_all(base);
}

TEST_CASE("e2e: bad input ends in one clear error") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-e2e-bad-" + std::to_string(::getpid()));
  TrainConfig c = tiny_config(out, "simgcd");
  c.data_root = (out / "nowhere").string();
  CHECK_THROWS_WITH(run_training(c, false), doctest::Contains("nowhere"));

  c = tiny_config(out, "simgcd");
  c.dataset = "imagenet1k";
  CHECK_THROWS_WITH(run_training(c, false), doctest::Contains("imagenet1k"));

  c = tiny_config(out, "simgcd");
  c.model.clear();
  c.weights = (out / "missing.safetensors").string();
  CHECK_THROWS_WITH(run_training(c, false), doctest::Contains("does not exist"));
  fs::create_directories(out);
  { std::ofstream(out / "garbage.safetensors") << "garbage"; }
  c.weights = (out / "garbage.safetensors").string();
  CHECK_THROWS_WITH(run_training(c, false), doctest::Contains("garbage.safetensors"));

  c = tiny_config(out, "simgcd");
  CHECK_THROWS_WITH(set_config_option(c, "method", "fixmatch"),
                    "--method: expected simgcd, simgcd+mcdl, kmeans, gcd or gcd+mcdl, got 'fixmatch'");

  // NaN injection: a backbone whose final norm is NaN makes the first loss NaN.
  c = tiny_config(out, "simgcd");
  VisionTransformer vit(parse_model_config(c.model).backbone);
  vit.initialize(0);
  vit.norm.weight.data<float>()[0] = std::nanf("");
  fs::create_directories(out);
  save_backbone_file((out / "nan.safetensors").string(), vit);
  c.model.clear();
  c.weights = (out / "nan.safetensors").string();
  CHECK_THROWS_WITH(run_training(c, false), doctest::Contains("became nan at epoch 0, iteration 0"));
  fs::remove_all(out);
}

TEST_CASE("e2e: --val-classes holds out known classes and half of the other labelled images, and scores them") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-e2e-val-" + std::to_string(::getpid()));
  TrainConfig c = tiny_config(out, "simgcd+mcdl");
  c.val_classes = 1;
  const TrainingData data = load_training_data(c);
  // The layout labels 18 images of each of classes 0–2: class 2 is held out whole, classes 0 and
  // 1 keep every other image (9 each).
  REQUIRE(data.labelled.size() == 18);
  REQUIRE(data.first_validation == 6u * 36u - 54u);
  REQUIRE(data.unlabelled.size() == data.first_validation + 36);
  CHECK(data.validation_classes == std::vector<int64_t>{2});
  const std::vector<int64_t> truth = data.unlabelled_labels(), val = data.validation_labels();
  const std::vector<bool> val_old = data.validation_is_old();
  int64_t held_out_new = 0;
  for (size_t p = 0; p < data.unlabelled.size(); ++p) {
    const bool validation = p >= data.first_validation;
    CHECK((truth[p] >= 0) != validation);  // the benchmark's score never sees a validation image
    CHECK((val[p] >= 0) == validation);
    if (validation) {
      CHECK(val[p] == data.label(data.unlabelled[p]));
      CHECK(val_old[p] == (val[p] != 2));
      held_out_new += val[p] == 2 ? 1 : 0;
    }
  }
  CHECK(held_out_new == 18);
  for (int64_t i : data.labelled) CHECK(data.label(i) < 2);

  c.epochs = 2;
  c.mcdl_start = 1;
  run_training(c, false);
  const std::string csv = read_text(out / "metrics.csv");
  CHECK(csv.find(",val_all,val_old,val_new,val_high,val_medium,val_high_precision,val_medium_precision,"
                 "val_high_conf_precision,val_medium_conf_precision,") != std::string::npos);
  CHECK(read_text(out / "config.json").find("\"val-classes\": 1") != std::string::npos);
  CHECK(resume_config(out.string()).mcdl_variant == McdlVariant::robust);
  {  // A run directory from before the variants existed resumes with the paper's MCDL, which it ran.
    std::string old_config = read_text(out / "config.json");
    const size_t at = old_config.find("  \"mcdl-variant\"");
    old_config.erase(at, old_config.find('\n', at) - at + 1);
    std::ofstream(out / "config.json") << old_config;
    CHECK(resume_config(out.string()).mcdl_variant == McdlVariant::paper);
  }

  // Scoring only the last epoch (--eval-every 0) leaves the first epoch's metrics empty, keeps the
  // columns, and changes nothing else: the last rows agree but for the time.
  TrainConfig last_only = c;
  last_only.out = (out / "last-only").string();
  last_only.eval_every = 0;
  run_training(last_only, false);
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(testing::without_timing(line));
    return out;
  };
  const std::vector<std::string> every = lines(csv), last = lines(read_text(fs::path(last_only.out) / "metrics.csv"));
  REQUIRE(last.size() == 3);
  CHECK(last[0] == every[0]);
  CHECK(last[2] == every[2]);
  CHECK(last[1] != every[1]);
  CHECK(last[1].find(",nan,nan,nan,") != std::string::npos);

  c.val_classes = 3;
  CHECK_THROWS_WITH(load_training_data(c), doctest::Contains("use at most 2"));
  c.method = parse_method("gcd");
  c.val_classes = 1;
  CHECK_THROWS_WITH(run_training(c, false), doctest::Contains("--val-classes"));
  fs::remove_all(out);
}

TEST_CASE("e2e: with the frozen block replayed as CUDA graphs, a run is bit for bit the eager run") {
  const fs::path base = fs::temp_directory_path() / ("mcdl-e2e-graphs-" + std::to_string(::getpid()));
  auto run = [&](CudaGraphs graphs) {
    const ScopedEngineSettings setting(&EngineSettings::cuda_graphs, graphs);
    TrainConfig c = tiny_config(base / cuda_graphs_name(graphs), "simgcd+mcdl");
    set_config_option(c, "device", "cuda");
    c.precision = MatmulPrecision::bf16;  // the frozen block in bf16, as on a GPU by default
    c.grad_from_block = 1;                // block 0 frozen
    c.epochs = 1;
    c.mcdl_start = 0;
    c.mu = 1;  // L_semi's MixMatch forward from the first step: batches of varying size
    c.batch_size = 32;
    return run_training(c, false);
  };
  run(CudaGraphs::off);
  const int64_t recordings = FrozenGraphs::process_recordings(), replays = FrozenGraphs::process_replays();
  run(CudaGraphs::frozen);
  MESSAGE("frozen-block graphs recorded: ", FrozenGraphs::process_recordings() - recordings,
          ", replayed: ", FrozenGraphs::process_replays() - replays);
  CHECK(FrozenGraphs::process_recordings() > recordings);
  CHECK(FrozenGraphs::process_replays() - replays >= 5);
  testing::check_same_checkpoints(base / "off/checkpoints/last.safetensors", base / "frozen/checkpoints/last.safetensors");
  CHECK(testing::metrics_without_timing(base / "off/metrics.csv") ==
        testing::metrics_without_timing(base / "frozen/metrics.csv"));
  CHECK(read_text(base / "off/predictions.csv") == read_text(base / "frozen/predictions.csv"));
  fs::remove_all(base);
}

TEST_CASE("e2e: with cuDNN's attention and GELU, a bf16 run plans every batch it meets and runs no other") {
  // MixMatch's forwards change size from step to step, the evaluation's last batch is short: every
  // size runs as chunks with cuDNN plans, so neither the fused attention nor the erf GELU's
  // product (the fallbacks, named in the emulator's range log) ever runs.
  const fs::path base = fs::temp_directory_path() / ("mcdl-e2e-cudnn-" + std::to_string(::getpid()));
  const ScopedEngineSettings attention(&EngineSettings::attention, AttentionAlgorithm::cudnn);
  const ScopedEngineSettings gelu(&EngineSettings::bf16_gelu, Bf16Gelu::cudnn);
  TrainConfig c = tiny_config(base, "simgcd+mcdl");
  set_config_option(c, "device", "cuda");
  c.precision = MatmulPrecision::bf16;
  c.grad_from_block = 1;  // block 0 frozen: its bf16 forward takes the cuDNN paths
  c.epochs = 1;
  c.mcdl_start = 0;
  c.mu = 1;  // L_semi's MixMatch forward from the first step
  c.batch_size = 32;
  const emu::RangeRecording recording;
  const RunSummary summary = run_training(c, false);
  CHECK(summary.iterations > 0);
  if (emu::emulated_device_count() == 0) return;  // the GPU binary records no ranges: the run is its check
  const std::vector<std::string> names = recording.names();
  const auto ran = [&](const char* name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  CHECK(ran("attention_bf16_cudnn"));
  CHECK(ran("linear_gelu_bf16_cudnn"));
  CHECK_FALSE(ran("attention_bf16"));
  CHECK_FALSE(ran("linear_gelu_bf16"));
  fs::remove_all(base);
}
