// --ema-teacher on a tiny run of the coloured squares: at momentum 0 the teacher is the model
// itself, so the run equals one without a teacher bit for bit (the wiring into SimGCD's
// self-distillation and MCDL's banks changes nothing else); at 0.9 it changes the run, its
// average is checkpointed and a resumed run equals the uninterrupted one; the setting is
// recorded in config.json and refused where it cannot apply.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "io/safetensors.h"
#include "mcdl/harness/run.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

fs::path base_dir(const std::string& name) {
  return fs::temp_directory_path() / ("mcdl-ema-" + name + "-" + std::to_string(::getpid()));
}

// 4 epochs of 6 iterations, MCDL's losses from epoch 2.
TrainConfig ema_config(const fs::path& out, Method method, std::optional<double> momentum) {
  TrainConfig c = testing::squares_run_config(testing::coloured_squares_dataset("ema"), out);
  c.method = method;
  c.epochs = 4;
  c.mu = 2;
  c.mcdl_start = 2;
  c.warmup_teacher_epochs = 2;
  c.ema_teacher = momentum;
  return c;
}

// The checkpoint's tensors whose names start with `prefix`, the prefix removed.
std::map<std::string, Tensor> with_prefix(const SafetensorsFile& file, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : file.tensors)
    if (name.rfind(prefix, 0) == 0) out[name.substr(prefix.size())] = t;
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("EMA teacher: at momentum 0 a run equals the run without a teacher (SimGCD and SimGCD + MCDL)") {
  for (Method method : {Method::simgcd, Method::simgcd_mcdl}) {
    INFO(method_name(method));
    const fs::path base = base_dir("zero");
    run_training(ema_config(base / "plain", method, std::nullopt), false);
    run_training(ema_config(base / "teacher", method, 0.0), false);
    CHECK(testing::metrics_without_timing(base / "plain/metrics.csv") ==
          testing::metrics_without_timing(base / "teacher/metrics.csv"));
    CHECK(testing::read_text(base / "plain/predictions.csv") == testing::read_text(base / "teacher/predictions.csv"));
    // After the last step the teacher is the model: every trained tensor is saved twice, alike.
    const SafetensorsFile file = load_safetensors((base / "teacher/checkpoints/last.safetensors").string());
    const auto model = with_prefix(file, "model."), teacher = with_prefix(file, "teacher.");
    REQUIRE(!teacher.empty());
    CHECK(teacher.size() == model.size());
    for (const auto& [name, t] : teacher) {
      INFO(name);
      REQUIRE(model.count(name) == 1);
      CHECK(same_bits(t, model.at(name)));
    }
    fs::remove_all(base);
  }
}

TEST_CASE("EMA teacher: at momentum 0.9 it changes the run, is checkpointed, and a resumed run equals the whole") {
  const fs::path base = base_dir("resume");
  run_training(ema_config(base / "plain", Method::simgcd_mcdl, std::nullopt), false);
  run_training(ema_config(base / "teacher", Method::simgcd_mcdl, 0.9), false);
  CHECK(testing::metrics_without_timing(base / "plain/metrics.csv") !=
        testing::metrics_without_timing(base / "teacher/metrics.csv"));
  const SafetensorsFile file = load_safetensors((base / "teacher/checkpoints/last.safetensors").string());
  const auto model = with_prefix(file, "model."), teacher = with_prefix(file, "teacher.");
  REQUIRE(teacher.size() == model.size());
  size_t differing = 0;
  for (const auto& [name, t] : teacher) differing += same_bits(t, model.at(name)) ? 0 : 1;
  CHECK(differing > 0);
  CHECK(testing::read_text(base / "teacher/config.json").find("\"ema-teacher\": \"0.9\"") != std::string::npos);
  CHECK(resume_config((base / "teacher").string()).ema_teacher == 0.9);
  // 6 iterations per epoch: stopped inside epoch 2, resumed from the end of epoch 1.
  testing::check_resume_matches_whole_run(ema_config(base / "unused", Method::simgcd_mcdl, 0.9), base / "halves", 15);
  fs::remove_all(base);
}

TEST_CASE("EMA teacher: the setting's text, its default and the runs that refuse it") {
  TrainConfig c;
  CHECK(!c.ema_teacher);
  CHECK(config_to_json(c).find("\"ema-teacher\": \"off\"") != std::string::npos);
  set_config_option(c, "ema-teacher", "0.999");
  CHECK(c.ema_teacher == 0.999);
  CHECK(config_from_json(config_to_json(c), "test").ema_teacher == 0.999);
  set_config_option(c, "ema-teacher", "off");
  CHECK(!c.ema_teacher);
  CHECK_THROWS_WITH(set_config_option(c, "ema-teacher", "fast"), doctest::Contains("--ema-teacher"));

  c.dataset = "fmnist";
  c.ema_teacher = 1.0;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--ema-teacher must be off or a momentum in [0, 1)"));
  c.ema_teacher = 0.99;
  validate_config(c);
  c.method = Method::gcd_mcdl;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--ema-teacher: the gcd+mcdl method has no teacher"));
}
