// The GCD baseline (--method gcd): GCD's projection head (names, shapes, initialisation, and
// forward + loss + gradients against PyTorch from tools/make_gcd_fixtures.py), gcd_loss (its
// gradient check, edge cases and errors), the method's options, and an end-to-end run on the
// coloured squares of tests/pipeline/test_training_e2e.cpp (learns, resumes bit for bit).
#include <doctest/doctest.h>

#include "tests/synthetic_folder_dataset.h"
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/decode.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "io/safetensors.h"
#include "layers/gcd_head.h"
#include "mcdl/harness/run.h"
#include "mcdl/method/gcd_loss.h"
#include "mcdl/run/train_config.h"
#include "tests/gradcheck.h"
#include "tests/run_checks.h"

using namespace mcdl;
using namespace mcdl::testing;
namespace fs = std::filesystem;

namespace {

SafetensorsFile& fixture() {  // __FILE__ is relative to the repository root, where tests run
  static SafetensorsFile file = load_safetensors(
      (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "gcd" / "head_loss.safetensors").string());
  return file;
}

const Tensor& fx(const std::string& name) {
  const auto it = fixture().tensors.find(name);
  REQUIRE_MESSAGE(it != fixture().tensors.end(), "no tensor '" << name << "' in the fixture");
  return it->second;
}

// |got − expected| ≤ atol + rtol·|expected| everywhere.
void check_close(const std::string& what, const Tensor& got, const Tensor& expected, double atol, double rtol) {
  INFO(what);
  REQUIRE(got.shape() == expected.shape());
  const std::vector<double> g = got.to(Device::cpu()).to_vector<double>(), e = expected.to_vector<double>();
  int reported = 0;
  for (size_t i = 0; i < e.size() && reported < 5; ++i)
    if (!(std::fabs(g[i] - e[i]) <= atol + rtol * std::fabs(e[i]))) {
      ++reported;
      FAIL_CHECK(what << "[" << i << "]: PyTorch " << e[i] << " vs engine " << g[i]);
    }
}

// Every (name, shape) of a module, in order.
std::vector<std::pair<std::string, Shape>> names_and_shapes(Module& m) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const NamedParameter& p : m.named_parameters()) out.emplace_back(p.name, p.tensor.shape());
  return out;
}

// The fixture's head (in 12, hidden 16, bottleneck 8, out 24) with its weights, in `dtype`.
GcdHead fixture_head(DType dtype, Device device) {
  GcdHead head(12, GcdHeadConfig{16, 8, 24, 0.02});
  head.to(dtype);  // first: load_parameters converts to the parameters' dtype
  std::map<std::string, Tensor> weights;
  for (const auto& [name, t] : fixture().tensors)
    if (name.rfind("head.", 0) == 0) weights[name.substr(5)] = t;
  head.load_parameters(weights);
  head.set_trainable(true);
  head.to(device);
  return head;
}

void check_against_pytorch(DType dtype, Device device, double atol, double rtol) {
  GcdHead head = fixture_head(dtype, device);
  Tensor features = fx("features").to(dtype).to(device).clone().set_requires_grad(true);
  const Tensor output = head.forward(features);
  check_close("output", output, fx("output"), atol, rtol);
  const GcdLossTerms loss =
      gcd_loss(output, fx("labels").to_vector<int64_t>(), fx("labelled").to_vector<uint8_t>(), 0.35, 1.0);
  check_close("contrastive", reshape(loss.contrastive, {1}), fx("contrastive"), atol, rtol);
  check_close("supcon", reshape(loss.supcon, {1}), fx("supcon"), atol, rtol);
  check_close("total", reshape(loss.total, {1}), fx("total"), atol, rtol);
  loss.total.backward();
  check_close("grad features", features.grad(), fx("grad.features"), atol, rtol);
  int trained = 0;
  for (const NamedParameter& p : head.named_parameters()) {
    if (!p.tensor.requires_grad()) {
      CHECK(p.name == "last_layer.weight_g");
      CHECK_FALSE(p.tensor.grad().defined());
      continue;
    }
    ++trained;
    check_close("grad " + p.name, p.tensor.grad(), fx("grad.head." + p.name), atol, rtol);
  }
  CHECK(trained == 7);
}

// ---- the coloured squares of tests/pipeline/test_training_e2e.cpp -----------------------------

constexpr int kClasses = testing::kSquareClasses, kSize = testing::kSquareImageSize;

fs::path make_folder_dataset() { return testing::coloured_squares_dataset("gcd-data"); }

TrainConfig tiny_gcd_config(const fs::path& out) { return testing::squares_gcd_config(make_folder_dataset(), out, "gcd"); }

using testing::read_text;

}  // namespace

TEST_CASE("gcd head: names and shapes as GCD's DINOHead state dict; weight_g frozen") {
  GcdHead head(768, GcdHeadConfig{});
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"mlp.0.weight", {2048, 768}}, {"mlp.0.bias", {2048}},  {"mlp.2.weight", {2048, 2048}},
      {"mlp.2.bias", {2048}},        {"mlp.4.weight", {256, 2048}}, {"mlp.4.bias", {256}},
      {"last_layer.weight_g", {65536, 1}}, {"last_layer.weight_v", {65536, 256}}};
  CHECK(names_and_shapes(head) == expected);
  CHECK_FALSE(head.last_layer.weight_g.requires_grad());
  head.set_trainable(false);
  CHECK_FALSE(head.any_trainable());
  head.set_trainable(true);
  CHECK(head.trainable_parameters().size() == 7);
  CHECK_FALSE(head.last_layer.weight_g.requires_grad());

  CHECK_THROWS_WITH(GcdHead(8, GcdHeadConfig{16, 4, 0, 0.02}), doctest::Contains("GcdHead: in_dim 8"));
  CHECK_THROWS_WITH(GcdHead(8, GcdHeadConfig{16, 4, 10, 0.0}), doctest::Contains("GcdHead: init_std"));
  GcdHead small(8, GcdHeadConfig{16, 4, 10, 0.02});
  CHECK_THROWS_WITH(small.forward(zeros({3, 9})), doctest::Contains("GcdHead: expected features [B, 8], got"));
}

TEST_CASE("gcd head: initialisation as DINOHead (trunc_normal MLP, zero biases, default-init weight_v, g = 1)") {
  GcdHead head(64, GcdHeadConfig{128, 32, 512, 0.02});
  head.initialize(5);
  for (const NamedParameter& p : head.named_parameters()) {
    INFO(p.name);
    const std::vector<double> v = p.tensor.to_vector<double>();
    double sum = 0, sq = 0, peak = 0;
    for (double x : v) {
      sum += x;
      sq += x * x;
      peak = std::max(peak, std::fabs(x));
    }
    const double n = static_cast<double>(v.size()), std = std::sqrt(sq / n - (sum / n) * (sum / n));
    if (p.name.ends_with(".bias")) CHECK(peak == 0.0);
    else if (p.name == "last_layer.weight_g") CHECK(sum == n);
    else if (p.name == "last_layer.weight_v") {  // U(±1/√32): std = bound/√3
      CHECK(peak <= 1.0 / std::sqrt(32.0));
      CHECK(std == doctest::Approx(1.0 / std::sqrt(32.0 * 3.0)).epsilon(0.05));
    } else
      CHECK(std == doctest::Approx(0.02).epsilon(0.05));
  }
}

TEST_CASE("gcd head + loss: output, InfoNCE, SupCon and gradients match PyTorch") {
  check_against_pytorch(DType::f64, Device::cpu(), 1e-12, 1e-10);
  check_against_pytorch(DType::f32, Device::cpu(), 2e-6, 2e-4);
  check_against_pytorch(DType::f32, Device::cuda(), 2e-6, 2e-4);  // the emulated kernels
}

TEST_CASE("gcd loss: gradient check, no labelled sample, errors") {
  const std::vector<int64_t> labels = {1, 0, 1, 2};
  const std::vector<uint8_t> labelled = {1, 1, 1, 0};
  check_op("gcd_loss", [&](const std::vector<Tensor>& in) { return gcd_loss(in[0], labels, labelled, 0.35, 1.0).total; },
           {random_tensor({8, 5}, 11).set_requires_grad(true)});
  check_op("gcd_loss (temperature 0.5)",
           [&](const std::vector<Tensor>& in) { return gcd_loss(in[0], labels, labelled, 0.35, 0.5).contrastive; },
           {random_tensor({8, 5}, 12).set_requires_grad(true)});

  const Tensor x = random_tensor({8, 5}, 13);
  const GcdLossTerms none = gcd_loss(x, labels, {0, 0, 0, 0}, 0.35, 1.0);
  CHECK(none.supcon.item() == 0.0);
  CHECK(none.total.item() == doctest::Approx(0.65 * none.contrastive.item()));

  CHECK_THROWS_WITH(gcd_loss(random_tensor({7, 5}, 1), labels, labelled, 0.35, 1.0),
                    doctest::Contains("gcd_loss: outputs must be [2B, C]"));
  CHECK_THROWS_WITH(gcd_loss(x, {1, 0}, labelled, 0.35, 1.0), doctest::Contains("gcd_loss: expected 4 labels"));
  CHECK_THROWS_WITH(gcd_loss(x, labels, {1, 2, 0, 0}, 0.35, 1.0), doctest::Contains("labelled flag 2 at 1"));
}

TEST_CASE("gcd options: accepted method, GCD's k-means defaults, new options validated") {
  TrainConfig c;
  c.method = parse_method("gcd");
  CHECK_NOTHROW(validate_config(c));
  CHECK(resolve_defaults(c).kmeans_restarts == 100);
  CHECK(resolve_defaults(c).kmeans_iters == 200);
  CHECK(c.gcd_head_out == 65536);
  CHECK(c.gcd_temperature == 1.0);
  c.kmeans_restarts = 7;
  CHECK(resolve_defaults(c).kmeans_restarts == 7);
  c.method = parse_method("kmeans");
  c.kmeans_restarts.reset();
  CHECK(resolve_defaults(c).kmeans_restarts == 10);
  CHECK(resolve_defaults(c).kmeans_iters == 300);

  set_config_option(c, "gcd-head-out", "1024");
  set_config_option(c, "gcd-temperature", "0.5");
  CHECK(c.gcd_head_out == 1024);
  CHECK(c.gcd_temperature == 0.5);
  c.gcd_head_out = 0;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--gcd-head-out"));
  c.gcd_head_out = 8;
  c.kmeans_iters = 0;
  CHECK_THROWS_WITH(validate_config(c), doctest::Contains("--kmeans-iters"));
}

TEST_CASE("e2e: --method gcd on coloured squares clusters old and new classes well above chance") {
  const fs::path out = fs::temp_directory_path() / ("mcdl-gcd-run-" + std::to_string(::getpid()));
  testing::check_learnt_squares(run_training(tiny_gcd_config(out), false), 8);
  for (const char* file : {"config.json", "split.csv", "metrics.jsonl", "metrics.csv", "predictions.csv",
                           "checkpoints/last.safetensors"})
    CHECK(fs::exists(out / file));
  const std::string csv = read_text(out / "metrics.csv");
  CHECK(csv.find("epoch,lr,loss,contrastive,supcon,iterations,all,old,new,train_seconds,eval_seconds,"
                 "eval_features_seconds,eval_cluster_seconds,eval_report_seconds,seconds\n") == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 9);
  // The loss column (the third) of the first and the last epoch: training lowered it.
  std::istringstream rows(csv);
  std::vector<double> losses;
  for (std::string line; std::getline(rows, line);)
    if (line.rfind("epoch", 0) != 0) {
      std::istringstream cells(line);
      std::string cell;
      for (int column = 0; column < 3; ++column) std::getline(cells, cell, ',');
      losses.push_back(std::stod(cell));
    }
  REQUIRE(losses.size() == 8);
  CHECK(losses.back() < losses.front() - 0.2);
  CHECK(read_text(out / "predictions.csv").find("id,prediction,label,old\n") == 0);
  const SafetensorsFile checkpoint = load_safetensors((out / "checkpoints/last.safetensors").string());
  CHECK(checkpoint.tensors.count("model.blocks.1.attn.qkv.weight") == 1);
  CHECK(checkpoint.tensors.count("projection_head.last_layer.weight_v") == 1);
  CHECK(checkpoint.tensors.count("optimizer.momentum_buffer.projection_head.mlp.0.bias") == 1);
  CHECK(checkpoint.tensors.count("optimizer.momentum_buffer.model.norm.weight") == 0);  // frozen final norm
  fs::remove_all(out);
  fs::remove_all(make_folder_dataset());
}

TEST_CASE("e2e: a resumed --method gcd run equals the uninterrupted run bit for bit (CPU)") {
  TrainConfig config = tiny_gcd_config(fs::temp_directory_path() / "unused");
  config.epochs = 2;
  // Epoch 1 (6 iterations) is checkpointed, the 2 of epoch 2 are not.
  testing::check_resume_matches_whole_run(
      config, fs::temp_directory_path() / ("mcdl-gcd-resume-" + std::to_string(::getpid())), 8);
  fs::remove_all(make_folder_dataset());
}
