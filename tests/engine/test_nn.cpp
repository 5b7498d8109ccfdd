#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstring>

#include "engine/ops/nn.h"
#include "engine/ops/shape.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return random_tensor(shape, seed, low, high).set_requires_grad(true);
}

void check_close(const Tensor& got, const std::vector<double>& expected, double tol = 1e-12) {
  const auto values = got.to_vector<double>();
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i)
    CHECK_MESSAGE(std::fabs(values[i] - expected[i]) <= tol * (1 + std::fabs(expected[i])),
                  "element " << i << ": " << values[i] << " vs " << expected[i]);
}

// Runs f with 1 thread and with 4 threads; the results must be bitwise equal.
template <class F>
void check_thread_count_independent(F&& f) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = f();
  omp_set_num_threads(4);
  const auto four = f();
  omp_set_num_threads(saved);
  CHECK(one == four);
}
}  // namespace

// Reference values below: PyTorch 1.13 in float64.
TEST_CASE("gelu: values and slope against PyTorch nn.GELU (exact erf form)") {
  Tensor x = from_vector<double>({-3, -1, -0.5, 0, 0.5, 1, 2.5}, {7}).set_requires_grad(true);
  Tensor y = gelu(x);
  check_close(y, {-0.00404969409489031, -0.15865525393145702, -0.15426876936299344, 0.0, 0.34573123063700656,
                  0.841344746068543, 2.4844758366855597});
  run_backward(y, ones({7}, DType::f64), false);
  check_close(x.grad(), {-0.01194564720418392, -0.08331547058768635, 0.13250487534383712, 0.5, 0.8674951246561629,
                         1.0833154705876864, 1.037611085908145});
}

TEST_CASE("gelu: gradients, batched") {
  check_op("gelu", [](auto& x) { return gelu(x[0]); }, {leaf({2, 3, 4}, 1, -3, 3)});
}

TEST_CASE("layer_norm: values against PyTorch F.layer_norm, with and without affine") {
  Tensor x = from_vector<double>({1, 2, 3, 5, -1, 0.5, 2, -3}, {2, 4});
  Tensor gamma = from_vector<double>({0.5, 1, 1.5, 2}, {4});
  Tensor beta = from_vector<double>({0.1, -0.2, 0.3, 0}, {4});
  check_close(layer_norm(x, gamma, beta, 1e-5),
              {-0.49160662606779015, -0.7070913937723915, 0.5535456968861959, 3.04254836263435,
               -0.06893409775570805, 0.2730154737159826, 2.225848714415072, -2.8380928422958958});
  check_close(layer_norm(x, Tensor(), Tensor(), 1e-5),
              {-1.1832132521355803, -0.5070913937723915, 0.1690304645907973, 1.521274181317175,
               -0.3378681955114161, 0.4730154737159826, 1.2838991429433813, -1.4190464211479479});
}

TEST_CASE("layer_norm: dx, dgamma and dbeta checked separately and together") {
  // Rows of moderate variance (values in [-2, 3]) so that eps is small against var.
  for (double eps : {1e-6, 1e-5}) {
    CAPTURE(eps);
    auto f = [eps](auto& x) { return layer_norm(x[0], x[1], x[2], eps); };
    const Shape xs{2, 3, 5};
    Tensor x = random_tensor(xs, 1, -2, 3), gamma = random_tensor({5}, 2, 0.5, 1.5), beta = random_tensor({5}, 3);
    check_op("layer_norm dx", f, {leaf(xs, 1, -2, 3), gamma, beta});
    check_op("layer_norm dgamma", f, {x, leaf({5}, 2, 0.5, 1.5), beta});
    check_op("layer_norm dbeta", f, {x, gamma, leaf({5}, 3)});
    check_op("layer_norm all", f, {leaf(xs, 1, -2, 3), leaf({5}, 2, 0.5, 1.5), leaf({5}, 3)});
  }
}

TEST_CASE("layer_norm: without affine, and gamma and beta the same tensor") {
  check_op("layer_norm no affine", [](auto& x) { return layer_norm(x[0], Tensor(), Tensor()); },
           {leaf({4, 6}, 4, -2, 3)});
  check_op("layer_norm gamma is beta", [](auto& x) { return layer_norm(x[0], x[1], x[1]); },
           {leaf({4, 6}, 5, -2, 3), leaf({6}, 6, 0.5, 1.5)});
}

TEST_CASE("layer_norm: dgamma over many rows does not depend on the thread count") {
  check_thread_count_independent([] {
    Tensor x = random_tensor({2000, 16}, 7, -2, 3, DType::f32);
    Tensor gamma = ones({16}).set_requires_grad(true), beta = zeros({16}).set_requires_grad(true);
    run_backward(layer_norm(x, gamma, beta), random_tensor({2000, 16}, 8, -1, 1, DType::f32), false);
    return std::pair{gamma.grad().to_vector<float>(), beta.grad().to_vector<float>()};
  });
}

TEST_CASE("layer_norm: rows normalised four at a time give each row's own bits") {
  // 4·3 + 3 rows: whole groups and a tail, in float (the path the training runs take).
  Tensor x = random_tensor({15, 37}, 9, -2, 3, DType::f32), gamma = random_tensor({37}, 10, 0.5, 1.5, DType::f32),
         beta = random_tensor({37}, 11, -1, 1, DType::f32);
  const std::vector<float> together = layer_norm(x, gamma, beta).to_vector<float>();
  for (int64_t r = 0; r < 15; ++r) {
    CAPTURE(r);
    const std::vector<float> alone = layer_norm(slice(x, 0, r, r + 1), gamma, beta).to_vector<float>();
    CHECK(std::memcmp(alone.data(), together.data() + r * 37, alone.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("softmax and log_softmax: values against PyTorch, stable for logits of ±50") {
  Tensor x = from_vector<double>({1, 2, 3, 50, -50, 0}, {2, 3});
  check_close(softmax(x), {0.09003057317038045, 0.2447284710547976, 0.6652409557748218, 1.0, 3.720075976020836e-44,
                           1.9287498479639178e-22});
  check_close(log_softmax(x), {-2.4076059644443806, -1.4076059644443804, -0.4076059644443804, 0.0, -100.0, -50.0});
  const auto f32 = log_softmax(x.to(DType::f32)).to_vector<float>();
  CHECK(f32[4] == -100.0f);
  CHECK(std::isfinite(softmax(x.to(DType::f32)).to_vector<float>()[4]));
}

TEST_CASE("softmax and log_softmax: gradients, batched and with large logits") {
  check_op("softmax", [](auto& x) { return softmax(x[0]); }, {leaf({2, 3, 5}, 9, -3, 3)});
  check_op("log_softmax", [](auto& x) { return log_softmax(x[0]); }, {leaf({2, 3, 5}, 10, -3, 3)});
  check_op("softmax large", [](auto& x) { return softmax(x[0]); }, {leaf({3, 4}, 11, -50, 50)});
  check_op("log_softmax large", [](auto& x) { return log_softmax(x[0]); }, {leaf({3, 4}, 12, -50, 50)});
  check_op("softmax 1-d", [](auto& x) { return softmax(x[0]); }, {leaf({6}, 13)});
}

TEST_CASE("l2_normalize: values against PyTorch F.normalize, with the 1e-12 clamp active on a row") {
  Tensor x = from_vector<double>({3, 4, 1e-13, -2e-13}, {2, 2}).set_requires_grad(true);
  Tensor y = l2_normalize(x);
  check_close(y, {0.6, 0.8, 0.1, -0.2});
  run_backward(y, from_vector<double>({1, 1, 1, -2}, {2, 2}), false);
  // Row 0: (g − y·(y·g))/‖x‖; row 1 (clamped): g / 1e-12.
  check_close(x.grad(), {0.032, -0.024, 1e12, -2e12});
}

TEST_CASE("l2_normalize: gradients above and below the clamp") {
  check_op("l2_normalize", [](auto& x) { return l2_normalize(x[0]); }, {leaf({2, 3, 4}, 14)});
  // eps = 1 puts rows of norm ≈ 0.2 under the clamp, far from the kink for finite differences.
  check_op("l2_normalize clamped", [](auto& x) { return l2_normalize(x[0], 1.0); }, {leaf({3, 4}, 15, -0.1, 0.1)});
}

TEST_CASE("weight_norm: values against PyTorch _weight_norm") {
  Tensor v = from_vector<double>({3, 4, 1, 2}, {2, 2});
  check_close(weight_norm(v, from_vector<double>({2, -1}, {2, 1})),
              {1.2000000000000002, 1.6, -0.4472135954999579, -0.8944271909999159});
  check_close(weight_norm(v, from_vector<double>({2, -1}, {2})),
              {1.2000000000000002, 1.6, -0.4472135954999579, -0.8944271909999159});
}

TEST_CASE("weight_norm: gradients for v and g, g as [out, 1] or [out], conv-shaped v") {
  auto f = [](auto& x) { return weight_norm(x[0], x[1]); };
  check_op("weight_norm", f, {leaf({4, 3}, 16), leaf({4, 1}, 17, 0.5, 2)});
  check_op("weight_norm g [out]", f, {leaf({4, 3}, 18), leaf({4}, 19, -2, -0.5)});
  check_op("weight_norm dv only", f, {leaf({4, 3}, 20), random_tensor({4, 1}, 21)});
  check_op("weight_norm dg only", f, {random_tensor({4, 3}, 22), leaf({4, 1}, 23)});
  check_op("weight_norm conv", f, {leaf({3, 2, 2, 2}, 24), leaf({3, 1, 1, 1}, 25)});
}

TEST_CASE("nn ops: bad arguments name the op and the shapes") {
  Tensor x = zeros({2, 4}, DType::f64);
  CHECK_THROWS_WITH(gelu(zeros({2}, DType::i64)), doctest::Contains("gelu: expected an f32 or f64 tensor, got i64[2]"));
  CHECK_THROWS_WITH(layer_norm(x, zeros({3}, DType::f64), zeros({4}, DType::f64)),
                    doctest::Contains("layer_norm: gamma f64[3] cpu does not match the last dimension of input "
                                      "f64[2, 4] cpu (expected [4])"));
  CHECK_THROWS_WITH(layer_norm(x, zeros({4}, DType::f64), zeros({1, 4}, DType::f64)),
                    doctest::Contains("layer_norm: beta f64[1, 4] cpu does not match"));
  CHECK_THROWS_WITH(layer_norm(x, zeros({4}, DType::f32), Tensor()), doctest::Contains("layer_norm: dtype mismatch"));
  CHECK_THROWS_WITH(layer_norm(zeros({2, 4}, DType::i32), Tensor(), Tensor()),
                    doctest::Contains("layer_norm: expected an f32 or f64 tensor, got i32[2, 4]"));
  CHECK_THROWS_WITH(layer_norm(x, Tensor(), Tensor(), -1.0), doctest::Contains("layer_norm: eps must be >= 0"));
  CHECK_THROWS_WITH(layer_norm(zeros({2, 0}, DType::f64), Tensor(), Tensor()),
                    doctest::Contains("layer_norm: the last dimension of input f64[2, 0] cpu is empty"));
  CHECK_THROWS_WITH(softmax(scalar_tensor(1, DType::f64)),
                    doctest::Contains("softmax: expected a tensor with at least 1 dimension, got f64[] cpu"));
  CHECK_THROWS_WITH(log_softmax(zeros({3}, DType::u8)), doctest::Contains("log_softmax: expected an f32 or f64"));
  CHECK_THROWS_WITH(l2_normalize(x, 0.0), doctest::Contains("l2_normalize: eps must be > 0"));
  CHECK_THROWS_WITH(weight_norm(x, zeros({4, 1}, DType::f64)),
                    doctest::Contains("weight_norm: g f64[4, 1] cpu does not fit v f64[2, 4] cpu (expected [2] or "
                                      "[2, 1])"));
  CHECK_THROWS_WITH(weight_norm(zeros({4}, DType::f64), zeros({4}, DType::f64)),
                    doctest::Contains("weight_norm: v must have at least 2 dimensions"));
}
