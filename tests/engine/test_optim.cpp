#include <doctest/doctest.h>

#include "engine/ops/linalg.h"
#include "engine/optim/adamw.h"
#include "engine/optim/ema.h"
#include "engine/optim/schedule.h"
#include "engine/optim/sgd.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

// Expected values below were worked out from the update formulas in double with python3 and
// agree with torch.optim.SGD / torch.optim.AdamW (foreach=False) on the same inputs.

namespace {

Tensor vec(const std::vector<double>& values, DType dtype = DType::f64) {
  return from_vector(values, {static_cast<int64_t>(values.size())}).to(dtype).clone();
}

void set_grad(Tensor& param, const std::vector<double>& values) { param.set_grad(vec(values, param.dtype())); }

void check_values(const Tensor& t, const std::vector<double>& expected, double tol) {
  const auto got = t.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (tol == 0) {
      CHECK(got[i] == expected[i]);
    } else {
      CHECK(got[i] == doctest::Approx(expected[i]).epsilon(tol));
    }
  }
}

const std::vector<std::vector<double>> sgd_grad_w = {{0.5, 1.0}, {0.25, -0.5}, {-1.0, 0.125}};
const std::vector<std::vector<double>> sgd_grad_b = {{-1.0}, {2.0}, {0.5}};

}  // namespace

TEST_CASE("SGD: momentum, weight decay, two groups and a parameter without a gradient") {
  for (DType dtype : {DType::f64, DType::f32}) {
    const std::string dtype_label = dtype_name(dtype);
    CAPTURE(dtype_label);
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-6;
    Tensor w = vec({1.0, -2.0}, dtype), frozen = vec({3.0}, dtype), b = vec({0.5}, dtype);
    Sgd sgd({{"decay", {{"w", w}, {"frozen", frozen}}, 0.1, 0.1}, {"no_decay", {{"b", b}}, 0.2, 0.0}},
            SgdOptions{0.9, false});
    const std::vector<std::vector<double>> w_after = {{0.94, -2.08}, {0.8516, -2.0812}, {0.863524, -2.073968}};
    const std::vector<std::vector<double>> w_buffer = {{0.6, 0.8}, {0.884, 0.012}, {-0.11924, -0.07232}};
    const std::vector<double> b_after = {0.7, 0.48, 0.182};
    for (size_t step = 0; step < 3; ++step) {
      set_grad(w, sgd_grad_w[step]);
      set_grad(b, sgd_grad_b[step]);
      sgd.step();
      check_values(w, w_after[step], tol);
      check_values(sgd.state().at("momentum_buffer.w"), w_buffer[step], tol);
      check_values(b, {b_after[step]}, tol);
    }
    check_values(frozen, {3.0}, 0);  // never had a gradient: untouched, no state
    CHECK(sgd.state().count("momentum_buffer.frozen") == 0);
    CHECK(sgd.state().size() == 2);
  }
}

TEST_CASE("SGD: plain and Nesterov updates") {
  Tensor w = vec({1.0, -2.0});
  Sgd plain({{"all", {{"w", w}}, 0.1, 0.1}});
  for (size_t step = 0; step < 2; ++step) {
    set_grad(w, sgd_grad_w[step]);
    plain.step();
  }
  check_values(w, {0.9056, -2.0092}, 1e-12);
  CHECK(plain.state().empty());  // no momentum, no buffers

  Tensor v = vec({1.0, -2.0});
  Sgd nesterov({{"all", {{"v", v}}, 0.1, 0.1}}, SgdOptions{0.9, true});
  set_grad(v, sgd_grad_w[0]);
  nesterov.step();
  check_values(v, {0.886, -2.152}, 1e-12);
  set_grad(v, sgd_grad_w[1]);
  nesterov.step();
  check_values(v, {0.773066, -2.080912}, 1e-12);
}

TEST_CASE("AdamW: weight decay, two groups, per-parameter step count when a gradient is missing") {
  const std::vector<std::vector<double>> grad_w = {{0.5, -1.0}, {0.25, 2.0}, {-1.0, 0.5}};
  const std::vector<std::vector<double>> w_after = {{0.9890000002, -1.9880000001},
                                                    {0.9786892040475462, -1.9896730353471075},
                                                    {0.9797740850842936, -1.9918398742792303}};
  const std::vector<std::vector<double>> m_after = {{0.05, -0.1}, {0.07, 0.11}, {-0.037, 0.149}};
  const std::vector<std::vector<double>> v_after = {
      {0.00025, 0.001}, {0.00031225, 0.004999}, {0.00131193775, 0.005244001}};
  const std::vector<double> b_after = {0.4800000002, 0.4800000002, 0.4898837968217488};
  for (DType dtype : {DType::f64, DType::f32}) {
    const std::string dtype_label = dtype_name(dtype);
    CAPTURE(dtype_label);
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-6;
    Tensor w = vec({1.0, -2.0}, dtype), b = vec({0.5}, dtype);
    AdamW adamw({{"decay", {{"w", w}}, 0.01, 0.1}, {"no_decay", {{"b", b}}, 0.02, 0.0}});
    for (size_t step = 0; step < 3; ++step) {
      set_grad(w, grad_w[step]);
      if (step == 1) {
        b.zero_grad();  // b is skipped at step 2: its step count stays at 1
      } else {
        set_grad(b, {step == 0 ? 1.0 : -3.0});
      }
      adamw.step();
      check_values(w, w_after[step], tol);
      check_values(adamw.state().at("exp_avg.w"), m_after[step], tol);
      check_values(adamw.state().at("exp_avg_sq.w"), v_after[step], tol);
      check_values(b, {b_after[step]}, tol);
    }
    CHECK(adamw.state().at("step.w").item() == 3);
    CHECK(adamw.state().at("step.b").item() == 2);
    CHECK(adamw.state().at("step.b").dtype() == DType::f64);
    CHECK(adamw.state().at("exp_avg.b").dtype() == dtype);
  }
}

TEST_CASE("optimizers: zero_grad drops gradients and set_lr changes the groups") {
  Tensor w = vec({1.0}), b = vec({2.0});
  Sgd sgd({{"decay", {{"w", w}}, 0.1, 0.0}, {"no_decay", {{"b", b}}, 0.2, 0.0}});
  set_grad(w, {1.0});
  set_grad(b, {1.0});
  sgd.zero_grad();
  CHECK_FALSE(w.grad().defined());
  CHECK_FALSE(b.grad().defined());
  sgd.step();  // nothing to do
  check_values(w, {1.0}, 0);
  sgd.set_lr(0.5);
  CHECK(sgd.groups()[0].lr == 0.5);
  CHECK(sgd.groups()[1].lr == 0.5);
  sgd.set_group_lr(1, 0.25);
  CHECK(sgd.groups()[1].lr == 0.25);
  set_grad(b, {2.0});
  sgd.step();
  check_values(b, {1.5}, 1e-15);
  CHECK_THROWS_WITH(sgd.set_group_lr(2, 0.1), doctest::Contains("SGD: set_group_lr: group 2 is out of range"));
  CHECK_THROWS_WITH(sgd.set_lr(-1.0), doctest::Contains("learning rate must be finite and >= 0"));
}

TEST_CASE("optimizers: the step runs without recording a graph and keeps the parameter storage") {
  Tensor w = vec({1.0, 2.0});
  w.set_requires_grad(true);
  const void* storage = w.raw_data();
  AdamW adamw({{"all", {{"w", w}}, 0.1, 0.0}});
  set_grad(w, {1.0, 1.0});
  adamw.step();
  CHECK(w.raw_data() == storage);
  CHECK(w.is_leaf());
  CHECK(w.requires_grad());
}

TEST_CASE("optimizers: a state dict round trip resumes the same trajectory") {
  Tensor w = vec({1.0, -2.0}), b = vec({0.5});
  AdamW original({{"decay", {{"layer.w", w}}, 0.01, 0.1}, {"no_decay", {{"layer.b", b}}, 0.02, 0.0}});
  for (int step = 0; step < 2; ++step) {
    set_grad(w, {0.5 + step, -1.0});
    set_grad(b, {1.0 - step});
    original.step();
  }
  StateDict saved = original.state_dict();
  CHECK(saved.size() == 6);
  for (const char* key : {"exp_avg.layer.w", "exp_avg_sq.layer.w", "step.layer.w", "exp_avg.layer.b",
                          "exp_avg_sq.layer.b", "step.layer.b"})
    CHECK(saved.count(key) == 1);
  // state_dict() copies: later steps do not change the saved tensors.
  const double saved_m = saved.at("exp_avg.layer.w").to_vector<double>()[0];

  Tensor w2 = w.clone(), b2 = b.clone();
  AdamW resumed({{"decay", {{"layer.w", w2}}, 0.01, 0.1}, {"no_decay", {{"layer.b", b2}}, 0.02, 0.0}});
  resumed.load_state_dict(saved);
  for (Tensor* t : {&w, &w2}) set_grad(*t, {-0.75, 0.25});
  for (Tensor* t : {&b, &b2}) set_grad(*t, {0.3});
  original.step();
  resumed.step();
  CHECK(max_abs_diff(w, w2) == 0);
  CHECK(max_abs_diff(b, b2) == 0);
  CHECK(resumed.state().at("step.layer.w").item() == 3);
  CHECK(saved.at("exp_avg.layer.w").to_vector<double>()[0] == saved_m);

  // SGD's momentum buffers round trip too: the loaded buffer makes the next step a later one.
  Tensor p = vec({1.0, -2.0});
  Sgd sgd({{"all", {{"p", p}}, 0.1, 0.1}}, SgdOptions{0.9, false});
  set_grad(p, sgd_grad_w[0]);
  sgd.step();
  Tensor p2 = p.clone();
  Sgd sgd2({{"all", {{"p", p2}}, 0.1, 0.1}}, SgdOptions{0.9, false});
  sgd2.load_state_dict(sgd.state_dict());
  set_grad(p2, sgd_grad_w[1]);
  sgd2.step();
  check_values(p2, {0.8516, -2.0812}, 1e-12);
  check_values(sgd2.state().at("momentum_buffer.p"), {0.884, 0.012}, 1e-12);
}

TEST_CASE("optimizers: load_state_dict validates names, shapes, dtypes and completeness") {
  Tensor w = vec({1.0, -2.0});
  AdamW adamw({{"all", {{"w", w}}, 0.01, 0.0}});
  set_grad(w, {1.0, 1.0});
  adamw.step();
  const StateDict good = adamw.state_dict();
  auto with = [&](const std::string& key, const Tensor& value) {
    StateDict s = good;
    s[key] = value;
    return s;
  };
  CHECK_THROWS_WITH(adamw.load_state_dict(with("momentum_buffer.w", vec({0, 0}))),
                    doctest::Contains("AdamW.load_state_dict: unknown state entry 'momentum_buffer.w'"));
  CHECK_THROWS_WITH(adamw.load_state_dict(with("exp_avg.v", vec({0, 0}))),
                    doctest::Contains("state entry 'exp_avg.v' names no parameter"));
  CHECK_THROWS_WITH(adamw.load_state_dict(with("exp_avg.w", vec({0, 0, 0}))),
                    doctest::Contains("state entry 'exp_avg.w' is f64[3] cpu but expected f64[2] cpu"));
  CHECK_THROWS_WITH(adamw.load_state_dict(with("exp_avg.w", vec({0, 0}, DType::f32))),
                    doctest::Contains("'exp_avg.w' is f32[2] cpu but expected f64[2] cpu"));
  CHECK_THROWS_WITH(adamw.load_state_dict(with("step.w", vec({1}))),
                    doctest::Contains("'step.w' is f64[1] cpu but expected f64[] cpu"));
  StateDict partial = good;
  partial.erase("step.w");
  CHECK_THROWS_WITH(adamw.load_state_dict(partial), doctest::Contains("parameter 'w' has 2 of its 3 state entries"));
  // A failed load leaves the state as it was.
  CHECK(adamw.state().size() == 3);
  adamw.load_state_dict({});  // a fresh start is allowed
  CHECK(adamw.state().empty());

  Sgd plain({{"all", {{"w", w}}, 0.1, 0.0}});
  CHECK_THROWS_WITH(plain.load_state_dict({{"momentum_buffer.w", vec({0, 0})}}),
                    doctest::Contains("SGD.load_state_dict: unknown state entry 'momentum_buffer.w'"));
}

TEST_CASE("optimizers: construction errors") {
  Tensor w = vec({1.0}), b = vec({2.0});
  CHECK_THROWS_WITH(Sgd({}), doctest::Contains("SGD: no parameter groups given"));
  CHECK_THROWS_WITH(Sgd({{"g", {{"w", w}, {"w", b}}, 0.1, 0.0}}),
                    doctest::Contains("SGD: parameter name 'w' appears more than once"));
  CHECK_THROWS_WITH(Sgd({{"a", {{"w", w}}, 0.1, 0.0}, {"b", {{"w2", w}}, 0.1, 0.0}}),
                    doctest::Contains("parameter 'w2' is the same tensor as an earlier parameter"));
  CHECK_THROWS_WITH(Sgd({{"g", {{"", w}}, 0.1, 0.0}}), doctest::Contains("has an empty name"));
  CHECK_THROWS_WITH(Sgd({{"g", {{"x", Tensor()}}, 0.1, 0.0}}), doctest::Contains("parameter 'x' is an undefined"));
  CHECK_THROWS_WITH(Sgd({{"g", {{"i", zeros({2}, DType::i64)}}, 0.1, 0.0}}),
                    doctest::Contains("SGD: parameter 'i' must be f32 or f64, got i64[2] cpu"));
  Tensor leaf = from_vector<double>({2.0}, {1, 1});
  leaf.set_requires_grad(true);
  CHECK_THROWS_WITH(Sgd({{"g", {{"y", matmul(leaf, leaf)}}, 0.1, 0.0}}),
                    doctest::Contains("SGD: parameter 'y' f64[1, 1] cpu is not a leaf"));
  CHECK_THROWS_WITH(Sgd({{"decay", {{"w", w}}, -0.1, 0.0}}),
                    doctest::Contains("SGD: group 'decay' needs a finite learning rate >= 0, got -0.1"));
  CHECK_THROWS_WITH(AdamW({{"decay", {{"w", w}}, 0.1, -1.0}}),
                    doctest::Contains("AdamW: group 'decay' needs a finite weight decay >= 0, got -1"));
  CHECK_THROWS_WITH(Sgd({{"g", {{"w", w}}, 0.1, 0.0}}, SgdOptions{-0.5, false}),
                    doctest::Contains("SGD: momentum must be finite and >= 0"));
  CHECK_THROWS_WITH(Sgd({{"g", {{"w", w}}, 0.1, 0.0}}, SgdOptions{0.0, true}),
                    doctest::Contains("SGD: Nesterov momentum requires a momentum > 0"));
  CHECK_THROWS_WITH(AdamW({{"g", {{"w", w}}, 0.1, 0.0}}, AdamWOptions{0.9, 1.0, 1e-8}),
                    doctest::Contains("AdamW: betas must lie in [0, 1), got (0.9, 1)"));
  CHECK_THROWS_WITH(AdamW({{"g", {{"w", w}}, 0.1, 0.0}}, AdamWOptions{0.9, 0.999, -1.0}),
                    doctest::Contains("AdamW: eps must be finite and >= 0"));
}

TEST_CASE("schedules: cosine annealing and linear warm-up at several epochs") {
  CosineAnnealing cosine(0.1, 10, 0.001);
  CHECK(cosine.lr_at(0) == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(cosine.lr_at(3) == doctest::Approx(0.07959536998847742).epsilon(1e-14));
  CHECK(cosine.lr_at(5) == doctest::Approx(0.0505).epsilon(1e-14));
  CHECK(cosine.lr_at(9) == doctest::Approx(0.0034227024433899004).epsilon(1e-13));
  CHECK(cosine.lr_at(10) == doctest::Approx(0.001).epsilon(1e-14));
  CHECK(CosineAnnealing(0.5, 4).lr_at(2) == doctest::Approx(0.25).epsilon(1e-15));

  WarmupCosine warmup(0.01, 5, 0.1, 105, 0.0);
  CHECK(warmup.lr_at(0) == doctest::Approx(0.01).epsilon(1e-15));
  CHECK(warmup.lr_at(2) == doctest::Approx(0.046).epsilon(1e-14));
  CHECK(warmup.lr_at(4) == doctest::Approx(0.082).epsilon(1e-14));
  CHECK(warmup.lr_at(5) == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(warmup.lr_at(55) == doctest::Approx(0.05).epsilon(1e-14));
  CHECK(warmup.lr_at(30) == doctest::Approx(0.08535533905932738).epsilon(1e-14));
  CHECK(warmup.lr_at(105) == doctest::Approx(0.0).epsilon(1e-15));
  CHECK(WarmupCosine(0.0, 0, 0.2, 10).lr_at(0) == doctest::Approx(0.2).epsilon(1e-15));  // no warm-up

  CHECK_THROWS_WITH(CosineAnnealing(0.1, 0), doctest::Contains("CosineAnnealing: total_epochs must be > 0, got 0"));
  CHECK_THROWS_WITH(CosineAnnealing(0.1, 10, 0.2), doctest::Contains("expected finite 0 <= eta_min <= base_lr"));
  CHECK_THROWS_WITH(cosine.lr_at(-1), doctest::Contains("CosineAnnealing: epoch must be >= 0, got -1"));
  CHECK_THROWS_WITH(WarmupCosine(0.0, 10, 0.1, 10),
                    doctest::Contains("WarmupCosine: expected 0 <= warmup_epochs < total_epochs, got 10 and 10"));
  CHECK_THROWS_WITH(WarmupCosine(-1.0, 2, 0.1, 10), doctest::Contains("WarmupCosine: start_lr must be finite"));
  CHECK_THROWS_WITH(warmup.lr_at(-2), doctest::Contains("WarmupCosine: epoch must be >= 0, got -2"));
}

TEST_CASE("EMA: a = m·a + (1 − m)·v in place, momentum 0 copies, 1 keeps; mismatches are named") {
  Tensor a = vec({1.0, -2.0, 4.0}), v = vec({3.0, 2.0, 0.0});
  ema_update({{"p", a}}, {{"p", v}}, 0.75);
  check_values(a, {1.5, -1.0, 3.0}, 0);  // 0.75·a + 0.25·v
  ema_update({{"p", a}}, {{"p", v}}, 1.0);
  check_values(a, {1.5, -1.0, 3.0}, 0);
  ema_update({{"p", a}}, {{"p", v}}, 0.0);
  check_values(a, {3.0, 2.0, 0.0}, 0);
  check_values(v, {3.0, 2.0, 0.0}, 0);  // the live tensor is only read

  // f32: each product rounded to float, then the sum (PyTorch's mul_(m).add_((1 − m)·v)).
  Tensor a32 = vec({0.1}, DType::f32), v32 = vec({0.7}, DType::f32);
  ema_update({{"p", a32}}, {{"p", v32}}, 0.99);
  const float expected = 0.1f * 0.99f + static_cast<float>(1.0 - 0.99) * 0.7f;
  CHECK(a32.to_vector<float>()[0] == expected);

  Tensor b = vec({1.0, 2.0});
  CHECK_THROWS_WITH(ema_update({{"p", a}}, {{"q", a}}, 0.5), doctest::Contains("'p' in the average and 'q'"));
  CHECK_THROWS_WITH(ema_update({{"p", a}}, {{"p", b}}, 0.5), doctest::Contains("'p' differs in shape"));
  CHECK_THROWS_WITH(ema_update({{"p", a}}, {}, 0.5), doctest::Contains("1 averaged parameters against 0"));
  CHECK_THROWS_WITH(ema_update({{"p", a}}, {{"p", v}}, 1.5), doctest::Contains("momentum must be in [0, 1]"));
}
