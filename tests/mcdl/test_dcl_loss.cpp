// MCDL's divide-and-conquer losses against PyTorch (tools/make_loss_fixtures.py): L_sup (and
// with an empty H), sharpening, the MixMatch targets and mixing, L_semi, L_self; gradients in
// double; CPU/CUDA parity; argument errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "engine/ops.h"
#include "mcdl/method/dcl_loss.h"
#include "tests/cuda/parity.h"
#include "tests/mcdl/loss_fixture.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

const LossFixture& dcl_fixture() {
  static const LossFixture fixture("dcl.safetensors");
  return fixture;
}

MixPlan fixture_plan() { return MixPlan{dcl_fixture().ints("mix.permutation"), dcl_fixture().number("mix.delta")}; }

// Rows of probabilities (softmax of random values), f64.
Tensor random_probs(const Shape& shape, uint64_t seed) { return softmax(random_tensor(shape, seed, -2, 2)); }

}  // namespace

TEST_CASE("dcl loss: L_sup and its gradient match PyTorch") {
  const LossFixture& f = dcl_fixture();
  Tensor proj = f.leaf("sup.projections");
  const Tensor loss = dcl_sup_loss(proj, f.ints("sup.labels"), f.flags("sup.labelled"), f.flags("sup.is_high"), 0.04);
  check_matches_fixture("L_sup", f["sup.loss"], as_row(loss), 2e-6, 2e-6);
  loss.backward();
  check_matches_fixture("L_sup grad", f["sup.grad_projections"], proj.grad(), 1e-6, 1e-4);
}

TEST_CASE("dcl loss: L_sup is zero without high samples and has gradients in double") {
  const std::vector<int64_t> labels = {0, 1, 0, 2, 1};
  const std::vector<uint8_t> labelled = {1, 1, 0, 0, 0}, high = {0, 0, 1, 0, 1}, none = {0, 0, 0, 0, 0};
  Tensor proj = random_tensor({10, 4}, 1).set_requires_grad(true);
  const Tensor zero = dcl_sup_loss(proj, labels, labelled, none);
  CHECK(zero.shape() == Shape{});
  CHECK(zero.item() == 0.0);
  CHECK(dcl_sup_loss(proj, labels, none, none).item() == 0.0);
  check_op("L_sup", [&](auto& x) { return dcl_sup_loss(x[0], labels, labelled, high, 0.5); },
           {random_tensor({10, 4}, 2).set_requires_grad(true)});
  // High samples alone (no labelled one): each still has its other view as a positive.
  check_op("L_sup high only", [&](auto& x) { return dcl_sup_loss(x[0], labels, none, high, 0.5); },
           {random_tensor({10, 4}, 3).set_requires_grad(true)});
}

TEST_CASE("dcl loss: sharpening matches PyTorch and has gradients") {
  const LossFixture& f = dcl_fixture();
  check_matches_fixture("sharpen", f["sharpen.out"], sharpen(f["sharpen.p"], 0.7), 1e-7, 1e-5);
  // Hand value: [0.25, 0.75] at T = 0.5 → [1, 9]/10.
  CHECK(sharpen(from_vector<double>({0.25, 0.75}, {1, 2}), 0.5).to_vector<double>() ==
        std::vector<double>{0.0625 / 0.625, 0.5625 / 0.625});
  check_op("sharpen", [](auto& x) { return sharpen(x[0], 0.7); },
           {random_tensor({3, 4}, 4, 0.1, 1.0).set_requires_grad(true)});
}

TEST_CASE("dcl loss: MixMatch targets (one-hot for H, sharpened bank means for M) match PyTorch") {
  const LossFixture& f = dcl_fixture();
  const Tensor targets =
      mixmatch_targets(f["targets.mode_w"].to_vector<int64_t>(), f["targets.mean_w"], f["targets.mean_s"], f.flags("targets.is_high"), 0.7);
  check_matches_fixture("targets", f["targets.out"], targets, 1e-7, 1e-5);
  // All high, all medium, none.
  const std::vector<int64_t> mode{2, 0};
  const Tensor mw = random_probs({2, 3}, 5), ms = random_probs({2, 3}, 6);
  CHECK(mixmatch_targets(mode, mw, ms, {1, 1}).to_vector<double>() == std::vector<double>{0, 0, 1, 1, 0, 0});
  check_close("all medium", sharpen((mw + ms) / 2.0, 0.7), mixmatch_targets(mode, mw, ms, {0, 0}), 1e-15, 0);
  CHECK(mixmatch_targets({}, zeros({0, 3}), zeros({0, 3}), {}).shape() == Shape{0, 3});
  // A mode outside [0, K) is caught on the host.
  CHECK_THROWS_WITH(mixmatch_targets({3, 0}, mw, ms, {1, 0}), doctest::Contains("one_hot: class 3 at position 0"));
}

TEST_CASE("dcl loss: one_hot values, errors and CUDA parity") {
  const Tensor classes = from_vector<int64_t>({2, 0, 2}, {3});
  CHECK(one_hot(classes, 3, DType::f64).to_vector<double>() == std::vector<double>{0, 0, 1, 1, 0, 0, 0, 0, 1});
  CHECK(one_hot(zeros({0}, DType::i64), 4).shape() == Shape{0, 4});
  CHECK_THROWS_WITH(one_hot(classes, 2), doctest::Contains("one_hot: class 2 at position 0 is outside [0, 2)"));
  CHECK_THROWS_WITH(one_hot(from_vector<int64_t>({0, -1}, {2}).to(Device::cuda()), 2),
                    doctest::Contains("one_hot: class -1 at position 1 is outside [0, 2)"));
  CHECK_THROWS_WITH(one_hot(classes.to(DType::i32), 3), doctest::Contains("one_hot: classes must be i64 [n]"));
  CHECK_THROWS_WITH(one_hot(classes, 3, DType::i64), doctest::Contains("one_hot: expected an f32 or f64"));
  std::vector<int64_t> many(197);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>((i * 37) % 101);
  for (DType dtype : {DType::f32, DType::f64})
    check_cuda_forward_parity("one_hot", [dtype](auto& x) { return one_hot(x[0], 101, dtype); },
                              {from_vector<int64_t>(many, {197})});
  // Classes made on the host: the same values, the range checked there.
  CHECK(one_hot(HostIndex({2, 0, 2}, Device::cpu()), 3, DType::f64).to_vector<double>() ==
        one_hot(classes, 3, DType::f64).to_vector<double>());
  CHECK(one_hot(HostIndex(many, Device::cuda()), 101).to(Device::cpu()).to_vector<float>() ==
        one_hot(from_vector<int64_t>(many, {197}), 101).to_vector<float>());
  CHECK_THROWS_WITH(one_hot(HostIndex({0, 5}, Device::cuda()), 5),
                    doctest::Contains("one_hot: class 5 at position 1 is outside [0, 5)"));
}

TEST_CASE("dcl loss: mixing images and targets with a plan matches PyTorch") {
  const LossFixture& f = dcl_fixture();
  const MixPlan plan = fixture_plan();
  check_matches_fixture("mixed images", f["mix.images_out"], mix(f["mix.images"], plan), 1e-6, 1e-6);
  check_matches_fixture("mixed targets", f["mix.targets_out"], mix(f["targets.out"], plan), 1e-7, 1e-6);
  check_op("mix", [plan](auto& x) { return mix(x[0], plan); }, {random_tensor({5, 3}, 7).set_requires_grad(true)});
  CHECK_THROWS_WITH(mix(zeros({4, 3}), plan), doctest::Contains("mix: x must have one row per permutation entry (5)"));
  CHECK_THROWS_WITH(mix(zeros({5, 3}), MixPlan{plan.permutation, 0.3}),
                    doctest::Contains("delta must lie in [0.5, 1]"));
}

TEST_CASE("dcl loss: a mix plan is δ' = max(δ, 1 − δ) with δ ~ Beta(α, α), then a permutation") {
  RandomStream stream(7, stream_id("mixmatch", {1, 2})), copy = stream;
  const MixPlan plan = draw_mix_plan(9, stream, 0.5);
  const double delta = copy.beta(0.5, 0.5);
  CHECK(plan.delta == std::max(delta, 1 - delta));
  CHECK(plan.permutation == copy.permutation(9));
  CHECK(stream.counter() == copy.counter());
  std::vector<int64_t> sorted = plan.permutation;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 9; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);
  // Over many draws δ' stays in [0.5, 1] and Beta(0.5, 0.5) puts most mass near the ends.
  int near_one = 0;
  for (int i = 0; i < 400; ++i) {
    const double d = draw_mix_plan(2, stream).delta;
    CHECK(d >= 0.5);
    CHECK(d <= 1.0);
    near_one += d > 0.9;
  }
  CHECK(near_one > 120);  // P(δ' > 0.9) = 2·P(δ > 0.9) = 0.41 for Beta(0.5, 0.5)
  CHECK(draw_mix_plan(0, stream).permutation.empty());
}

TEST_CASE("dcl loss: L_semi matches PyTorch, its parts, and has gradients") {
  const LossFixture& f = dcl_fixture();
  Tensor logits = f.leaf("semi.logits");
  const Tensor loss = semi_loss(logits, f["semi.targets"], f.flags("targets.is_high"), 0.1);
  check_matches_fixture("L_semi", f["semi.loss"], as_row(loss), 2e-6, 2e-6);
  loss.backward();
  check_matches_fixture("L_semi grad", f["semi.grad_logits"], logits.grad(), 1e-6, 1e-4);

  const Tensor l = random_tensor({3, 4}, 8), y = random_probs({3, 4}, 9);
  // All high: CE only; all medium: the squared L2 norms averaged over rows; none: 0.
  CHECK(semi_loss(l, y, {1, 1, 1}).item() == doctest::Approx(cross_entropy_soft(l / 0.1, y).item()));
  const Tensor diff = softmax(l / 0.1) - y;
  CHECK(semi_loss(l, y, {0, 0, 0}).item() == doctest::Approx(sum(diff * diff).item() / 3));
  CHECK(semi_loss(zeros({0, 4}, DType::f64), zeros({0, 4}, DType::f64), {}).item() == 0.0);
  check_op(
      "L_semi",
      [](auto& x) {
        return semi_loss(x[0], x[1], {1, 0, 0, 1}, 0.5);
      },
      {random_tensor({4, 3}, 10).set_requires_grad(true), random_probs({4, 3}, 11).detach().set_requires_grad(true)});
}

TEST_CASE("dcl loss: L_self matches PyTorch; the weak prediction gets no gradient") {
  const LossFixture& f = dcl_fixture();
  Tensor weak = f.leaf("self.weak"), strong = f.leaf("self.strong_logits");
  const Tensor loss = self_loss(weak, strong, 0.7, 0.1);
  check_matches_fixture("L_self", f["self.loss"], as_row(loss), 2e-6, 2e-6);
  loss.backward();
  check_matches_fixture("L_self grad", f["self.grad_strong_logits"], strong.grad(), 1e-6, 1e-4);
  CHECK_FALSE(weak.grad().defined());
  CHECK(self_loss(zeros({0, 3}), zeros({0, 3})).item() == 0.0);
  const Tensor weak_fixed = random_probs({4, 3}, 12);
  check_op("L_self", [weak_fixed](auto& x) { return self_loss(weak_fixed.to(x[0].dtype()), x[0], 0.7, 0.5); },
           {random_tensor({4, 3}, 13).set_requires_grad(true)});
}

TEST_CASE("dcl loss: the same values and gradients on the CUDA device") {
  const std::vector<int64_t> labels = {0, 1, 0, 2, 1};
  const std::vector<uint8_t> labelled = {1, 1, 0, 0, 0}, high = {0, 0, 1, 0, 1};
  check_cuda_parity(
      "L_sup", [&](auto& x) { return dcl_sup_loss(x[0], labels, labelled, high); }, {leaf({10, 6}, 14)}, 1e-5, 1e-4);
  check_cuda_parity(
      "L_semi",
      [](auto& x) {
        return semi_loss(x[0], x[1], {1, 0, 0, 1, 0});
      },
      {leaf({5, 7}, 15), softmax(leaf({5, 7}, 16)).detach()}, 1e-5, 1e-4);
  check_cuda_parity(
      "L_self", [](auto& x) { return self_loss(x[0], x[1]); }, {softmax(leaf({5, 7}, 17)).detach(), leaf({5, 7}, 18)},
      1e-5, 1e-4);
  check_cuda_forward_parity(
      "mixmatch targets",
      [](auto& x) {
        return mixmatch_targets({3, 0, 6, 2, 1}, x[0], x[1], {1, 0, 0, 1, 0});
      },
      {softmax(leaf({5, 7}, 19)).detach(),
       softmax(leaf({5, 7}, 20)).detach()},
      1e-6, 1e-5);
  const MixPlan plan{{2, 0, 4, 1, 3}, 0.75};
  check_cuda_parity(
      "mix", [plan](auto& x) { return mix(x[0], plan); }, {leaf({5, 3, 4}, 21)}, 1e-6, 1e-6);
}

TEST_CASE("dcl loss: argument errors name the function and the shapes") {
  CHECK_THROWS_WITH(dcl_sup_loss(zeros({6, 4}), {0, 1, 2}, {1, 0, 0}, {1, 0, 0}),
                    doctest::Contains("dcl_sup_loss: sample 0 is both labelled and high"));
  CHECK_THROWS_WITH(dcl_sup_loss(zeros({5, 4}), {0, 1, 2}, {1, 0, 0}, {0, 1, 0}),
                    doctest::Contains("dcl_sup_loss: projections f32[5, 4] cpu need [2B, D] for B = 3"));
  CHECK_THROWS_WITH(semi_loss(zeros({3, 4}), zeros({3, 4}), {1, 0}), doctest::Contains("semi_loss: mixed_logits"));
  CHECK_THROWS_WITH(semi_loss(zeros({2, 4}), zeros({2, 4}), {1, 3}), doctest::Contains("semi_loss: flag 3 at 1"));
  CHECK_THROWS_WITH(self_loss(zeros({2, 4}), zeros({2, 3})), doctest::Contains("self_loss: weak_probs f32[2, 4] cpu"));
  CHECK_THROWS_WITH(sharpen(zeros({2, 4}), 0), doctest::Contains("sharpen: temperature must be positive"));
  CHECK_THROWS_WITH(mixmatch_targets({0, 1}, zeros({2, 3}), zeros({3, 3}), {1, 0}),
                    doctest::Contains("mixmatch_targets: expected n modes"));
  RandomStream stream(1, 2);
  CHECK_THROWS_WITH(draw_mix_plan(-1, stream), doctest::Contains("draw_mix_plan: expected n >= 0"));
}
