// SimGCD's loss terms against PyTorch (tools/make_loss_fixtures.py), their gradients in double,
// the no-labelled-row guard, the teacher schedule, and CPU/CUDA parity of the whole loss.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "engine/ops.h"
#include "mcdl/method/simgcd_loss.h"
#include "tests/cuda/parity.h"
#include "tests/mcdl/loss_fixture.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

SimGCDLossConfig config_of(const LossFixture& f) {
  SimGCDLossConfig config;
  config.memax_weight = f.number("memax_weight");
  return config;
}

using TermOf = std::function<Tensor(const SimGCDLossTerms&)>;
const std::pair<const char*, TermOf> simgcd_terms[] = {
    {"total", [](const SimGCDLossTerms& t) { return t.total; }},
    {"cls", [](const SimGCDLossTerms& t) { return t.cls; }},
    {"cluster", [](const SimGCDLossTerms& t) { return t.cluster; }},
    {"memax", [](const SimGCDLossTerms& t) { return t.memax; }},
    {"contrastive", [](const SimGCDLossTerms& t) { return t.contrastive; }},
    {"supcon", [](const SimGCDLossTerms& t) { return t.supcon; }},
};

// Labels of a batch of 4: samples 0 and 2 labelled with the same class (supcon positives across
// samples), sample 3 labelled alone.
const std::vector<int64_t> small_labels = {1, 0, 1, 2};
const std::vector<uint8_t> small_labelled = {1, 0, 1, 1};

}  // namespace

TEST_CASE("simgcd loss: teacher temperature follows np.linspace then the final value") {
  const LossFixture f("teacher_schedule.safetensors");
  const std::vector<double> expected = f["temperatures"].to_vector<double>();
  const SimGCDLossConfig config;
  for (int64_t e = 0; e < 200; ++e) CHECK(teacher_temperature(config, e) == expected[static_cast<size_t>(e)]);
  CHECK(teacher_temperature(config, 0) == 0.07);
  CHECK(teacher_temperature(config, 29) == 0.04);
  CHECK_THROWS_WITH(teacher_temperature(config, 200), doctest::Contains("teacher_temperature: epoch 200"));
  CHECK_THROWS_WITH(teacher_temperature(config, -1), doctest::Contains("outside [0, 200)"));
  SimGCDLossConfig one = config;
  one.warmup_teacher_epochs = 1;
  CHECK(teacher_temperature(one, 0) == 0.07);
  CHECK(teacher_temperature(one, 1) == 0.04);
}

TEST_CASE("simgcd loss: every term and its gradients match PyTorch") {
  // f32 as in training; the reference is PyTorch's f32 computation, so agreement is to float
  // rounding of sums over a few dozen terms.
  for (const char* file : {"simgcd_epoch3.safetensors", "simgcd_epoch40.safetensors"}) {
    CAPTURE(file);
    const LossFixture f(file);
    for (const auto& [name, term_of] : simgcd_terms) {
      CAPTURE(name);
      Tensor logits = f.leaf("logits"), projections = f.leaf("projections");
      const SimGCDLossTerms terms = simgcd_loss(logits, projections, f.ints("labels"), f.flags("labelled"),
                                                f.ints("epoch")[0], config_of(f));
      const Tensor term = term_of(terms);
      CHECK(term.shape() == Shape{});
      check_matches_fixture(std::string(name) + " value", f[name], as_row(term), 2e-6, 2e-6);
      term.backward();
      const std::string grad_prefix = std::string(name) + ".grad_";
      // A term that does not depend on an input leaves it without a gradient; PyTorch's is zero.
      for (Tensor* input : {&logits, &projections}) {
        const std::string key = grad_prefix + (input == &logits ? "logits" : "projections");
        if (input->grad().defined())
          check_matches_fixture(key, f[key], input->grad(), 1e-6, 1e-4);
        else
          CHECK(f[key].to_vector<float>() == std::vector<float>(static_cast<size_t>(input->numel()), 0.0f));
      }
    }
  }
}

TEST_CASE("simgcd loss: gradients of every term in double") {
  const SimGCDLossConfig config;
  for (const auto& [name, term_of] : simgcd_terms) {
    const TermOf pick = term_of;
    // Only the inputs a term depends on get a gradient (cls, cluster, memax: the logits;
    // contrastive, supcon: the projections).
    const std::string term = name;
    const bool on_logits = term != "contrastive" && term != "supcon";
    const bool on_projections = term == "total" || term == "contrastive" || term == "supcon";
    const TensorFn f = [pick, config](const std::vector<Tensor>& x) {
      return pick(simgcd_loss(x[0], x[1], small_labels, small_labelled, 5, config));
    };
    const std::vector<Tensor> inputs = {random_tensor({8, 5}, 1).set_requires_grad(on_logits),
                                        random_tensor({8, 6}, 2).set_requires_grad(on_projections)};
    if (term == "cluster" || term == "total") {
      // The teacher is detached (a stop-gradient), so finite differences of the function are not
      // its gradient; the fixtures check these gradients against PyTorch.
      check_float_matches_double("simgcd " + term, f, inputs);
      check_backward_contract("simgcd " + term, f, inputs);
    } else {
      check_op("simgcd " + term, f, inputs);
    }
  }
  check_op("mean_entropy_penalty", [](auto& x) { return mean_entropy_penalty(x[0], 0.1); },
           {random_tensor({6, 4}, 4).set_requires_grad(true)});
  check_op("info_nce_loss", [](auto& x) { return info_nce_loss(x[0], 0.5); },
           {random_tensor({6, 3}, 5).set_requires_grad(true)});
  check_op("supcon_loss some anchors",
           [](auto& x) { return supcon_loss(l2_normalize(x[0]), {0, 1, 0, 1, 2, 2}, {1, 4, 5}, 0.5, 0.7); },
           {random_tensor({6, 3}, 6).set_requires_grad(true)});
}

TEST_CASE("simgcd loss: hand-checked pieces") {
  // Uniform logits: the mean softmax is uniform, so the me-max penalty is 0; the distillation is
  // then the cross-entropy of two uniform distributions, log K.
  const Tensor flat = zeros({4, 3}, DType::f64);
  CHECK(mean_entropy_penalty(flat, 0.1).item() == doctest::Approx(0.0).epsilon(1e-12));
  CHECK(cross_view_distillation(flat, 0.1, 0.04).item() == doctest::Approx(std::log(3.0)));
  // Two samples, views identical: info-NCE row i has positive cos 1 and two negatives.
  const Tensor proj = from_vector<double>({1, 0, 0, 1, 1, 0, 0, 1}, {4, 2});
  const double expected = -1.0 + std::log(std::exp(1.0) + 2.0);  // negatives: cos 0 twice
  CHECK(info_nce_loss(proj, 1.0).item() == doctest::Approx(expected));
  // SupCon with one anchor: positives rows 1 and 2 (label 0), self row 0 dropped.
  const Tensor feats = from_vector<double>({1, 0, 0, 1, 1, 0, -1, 0}, {4, 2});
  const double t = 0.5, lse = std::log(std::exp(0 / t) + std::exp(1 / t) + std::exp(-1 / t));
  const double sup = -((0 / t - lse) + (1 / t - lse)) / 2 * (t / 0.25);
  CHECK(supcon_loss(feats, {0, 0, 0, 1}, {0}, t, 0.25).item() == doctest::Approx(sup));
  CHECK(supcon_loss(feats, {0, 0, 0, 1}, {}, t, 0.25).item() == 0.0);
}

TEST_CASE("simgcd loss: a batch without a labelled row has zero cls and supcon, not NaN") {
  Tensor logits = random_tensor({8, 5}, 7).set_requires_grad(true);
  Tensor projections = random_tensor({8, 6}, 8).set_requires_grad(true);
  const SimGCDLossTerms t = simgcd_loss(logits, projections, {0, 0, 0, 0}, {0, 0, 0, 0}, 0, SimGCDLossConfig{});
  CHECK(t.cls.item() == 0.0);
  CHECK(t.supcon.item() == 0.0);
  CHECK(std::isfinite(t.total.item()));
  const double w = 0.35;
  CHECK(t.total.item() == doctest::Approx((1 - w) * (t.cluster.item() + 2.0 * t.memax.item() + t.contrastive.item())));
  t.total.backward();
  for (double g : logits.grad().to_vector<double>()) CHECK(std::isfinite(g));
  for (double g : projections.grad().to_vector<double>()) CHECK(std::isfinite(g));
}

TEST_CASE("simgcd loss: the same values and gradients on the CUDA device") {
  // Composed of engine ops: the parity is the engine's kernels' (f32, sums of a few dozen terms).
  const SimGCDLossConfig config;
  for (const auto& [name, term_of] : simgcd_terms) {
    const TermOf pick = term_of;
    check_cuda_parity(std::string("simgcd ") + name,
                      [pick, config](const std::vector<Tensor>& x) {
                        return pick(simgcd_loss(x[0], x[1], small_labels, small_labelled, 12, config));
                      },
                      {leaf({8, 7}, 9), leaf({8, 5}, 10)}, 1e-5, 1e-4);
  }
}

TEST_CASE("simgcd loss: argument errors name the function and the shapes") {
  const Tensor logits = zeros({8, 5}), proj = zeros({8, 6});
  const SimGCDLossConfig config;
  CHECK_THROWS_WITH(simgcd_loss(zeros({7, 5}), zeros({7, 6}), small_labels, small_labelled, 0, config),
                    doctest::Contains("simgcd_loss: logits must be [2B, C]"));
  CHECK_THROWS_WITH(simgcd_loss(logits, zeros({6, 6}), small_labels, small_labelled, 0, config),
                    doctest::Contains("simgcd_loss: projections f32[6, 6] cpu do not match logits f32[8, 5] cpu"));
  CHECK_THROWS_WITH(simgcd_loss(logits, proj, {1, 2, 3}, small_labelled, 0, config),
                    doctest::Contains("expected 4 labels and labelled flags"));
  CHECK_THROWS_WITH(simgcd_loss(logits, proj, small_labels, {1, 2, 0, 0}, 0, config),
                    doctest::Contains("labelled flag 2 at 1 is not 0 or 1"));
  CHECK_THROWS_WITH(simgcd_loss(logits, proj.to(DType::f64), small_labels, small_labelled, 0, config),
                    doctest::Contains("simgcd_loss: dtype mismatch"));
  CHECK_THROWS_WITH(simgcd_loss(logits, proj, {1, 0, 9, 2}, small_labelled, 0, config),
                    doctest::Contains("cross_entropy"));
  CHECK_THROWS_WITH(supcon_loss(zeros({4, 2}), {0, 1, 2, 2}, {0}, 0.1, 0.1),
                    doctest::Contains("supcon_loss: anchor 0 (label 0) has no positive"));
  CHECK_THROWS_WITH(supcon_loss(zeros({4, 2}), {0, 0, 2, 2}, {1, 1}, 0.1, 0.1),
                    doctest::Contains("supcon_loss: anchor 1 is given twice"));
  CHECK_THROWS_WITH(supcon_loss(zeros({4, 2}), {0, 0, 2, 2}, {4}, 0.1, 0.1),
                    doctest::Contains("supcon_loss: anchor 4 is out of range for features f32[4, 2] cpu"));
  CHECK_THROWS_WITH(supcon_loss(zeros({4, 2}), {0, 0}, {0}, 0.1, 0.1), doctest::Contains("supcon_loss: 2 labels"));
  CHECK_THROWS_WITH(info_nce_loss(zeros({3, 2}), 1.0), doctest::Contains("info_nce_loss: projections must be"));
  CHECK_THROWS_WITH(mean_entropy_penalty(zeros({0, 2}), 0.1), doctest::Contains("mean_entropy_penalty: logits"));
}

TEST_CASE("simgcd loss: an EMA teacher's logits are the self-distillation's targets, and get no gradient") {
  const SimGCDLossConfig config;
  const Tensor logits = random_tensor({8, 5}, 1), projections = random_tensor({8, 6}, 2);
  // The logits' own values as the teacher's: every term bit for bit as without a teacher.
  const SimGCDLossTerms own = simgcd_loss(logits, projections, small_labels, small_labelled, 5, config);
  const SimGCDLossTerms same =
      simgcd_loss(logits, projections, small_labels, small_labelled, 5, config, logits.clone());
  CHECK(own.total.item() == same.total.item());
  CHECK(own.cluster.item() == same.cluster.item());
  // Another teacher: only the distillation term moves; with the targets fixed it is a plain
  // function of the student's logits, so its gradient is checked by finite differences.
  const Tensor teacher = random_tensor({8, 5}, 3);
  const SimGCDLossTerms other = simgcd_loss(logits, projections, small_labels, small_labelled, 5, config, teacher);
  CHECK(other.cluster.item() != own.cluster.item());
  CHECK(other.memax.item() == own.memax.item());
  CHECK(other.cls.item() == own.cls.item());
  // Row i of view 1 learns from the teacher's row i of view 2 and vice versa.
  const Tensor swapped = concat({slice(teacher, 0, 4, 8), slice(teacher, 0, 0, 4)}, 0);
  const double by_hand = cross_entropy_soft(logits / 0.1, softmax(swapped / 0.04)).item();
  CHECK(cross_view_distillation(logits, 0.1, 0.04, teacher).item() == doctest::Approx(by_hand).epsilon(1e-12));
  check_op("cross_view_distillation with a teacher",
           [teacher](auto& x) { return cross_view_distillation(x[0], 0.1, 0.04, teacher.to(x[0].dtype())); },
           {random_tensor({8, 5}, 4).set_requires_grad(true)});
  const Tensor student = random_tensor({8, 5}, 5).set_requires_grad(true), graded = teacher.clone().set_requires_grad(true);
  cross_view_distillation(student, 0.1, 0.04, graded).backward();
  CHECK(student.grad().defined());
  CHECK(!graded.grad().defined());
  CHECK_THROWS_WITH(cross_view_distillation(logits, 0.1, 0.04, random_tensor({8, 4}, 6)),
                    doctest::Contains("teacher logits"));
}
