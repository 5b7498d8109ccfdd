#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>

#include "engine/ops/indexing.h"
#include "engine/ops/loss.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return random_tensor(shape, seed, low, high).set_requires_grad(true);
}

Tensor small_logits() { return from_vector<double>({1, 2, 0.5, 0.1, -1, 3}, {2, 3}); }
}  // namespace

// Reference values below: PyTorch 1.13 in float64.
TEST_CASE("cross_entropy: value against PyTorch, a 0-dim result, i64 and i32 targets") {
  Tensor loss = cross_entropy(small_logits(), from_vector<int64_t>({2, 0}, {2}));
  CHECK(loss.shape().empty());
  CHECK(loss.item() == doctest::Approx(2.467571501534218).epsilon(1e-14));
  CHECK(cross_entropy(small_logits(), from_vector<int32_t>({2, 0}, {2})).item() ==
        doctest::Approx(2.467571501534218).epsilon(1e-14));
  CHECK(cross_entropy(small_logits().to(DType::f32), from_vector<int64_t>({2, 0}, {2})).item() ==
        doctest::Approx(2.467571501534218).epsilon(1e-6));
}

TEST_CASE("cross_entropy: gradients, including logits of ±50") {
  auto f = [](auto& x) { return cross_entropy(x[0], x[1]); };
  check_op("cross_entropy", f, {leaf({5, 4}, 1, -3, 3), from_vector<int64_t>({0, 3, 1, 1, 2}, {5})});
  check_op("cross_entropy i32", f, {leaf({3, 6}, 2, -3, 3), from_vector<int32_t>({5, 0, 2}, {3})});
  check_op("cross_entropy large", f, {leaf({4, 3}, 3, -50, 50), from_vector<int64_t>({0, 1, 2, 0}, {4})});
}

TEST_CASE("cross_entropy on targets made on the host: the same loss and gradient, the range checked there") {
  const std::vector<int64_t> targets{0, 3, 1, 1, 2};
  auto f = [&](auto& x) { return cross_entropy(x[0], HostIndex(targets, x[0].device())); };
  check_op("cross_entropy, host targets", f, {leaf({5, 4}, 4, -3, 3)});
  const Tensor logits = leaf({5, 4}, 5, -3, 3);
  const Tensor from_host = cross_entropy(logits, HostIndex(targets, Device::cpu()));
  CHECK(from_host.item() == cross_entropy(logits, from_vector<int64_t>(targets, {5})).item());
  CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}, DType::f64), HostIndex({0, 3}, Device::cpu())),
                    doctest::Contains("cross_entropy: target 3 at position 1 is out of range for 3 classes"));
  CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}, DType::f64), HostIndex({0, 1, 2}, Device::cpu())),
                    doctest::Contains("cross_entropy: targets i64[3] cpu do not match logits f64[2, 3] cpu"));
}

TEST_CASE("cross_entropy: the loss over many rows does not depend on the thread count") {
  std::vector<int64_t> labels(4000);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  Tensor logits = random_tensor({4000, 10}, 4, -5, 5, DType::f32), targets = from_vector(labels, {4000});
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const double one = cross_entropy(logits, targets).item();
  omp_set_num_threads(4);
  const double four = cross_entropy(logits, targets).item();
  omp_set_num_threads(saved);
  CHECK(one == four);
}

TEST_CASE("cross_entropy_soft: value against PyTorch cross_entropy with probability targets") {
  Tensor probs = from_vector<double>({0.2, 0.3, 0.5, 1, 0, 0}, {2, 3});
  Tensor loss = cross_entropy_soft(small_logits(), probs);
  CHECK(loss.shape().empty());
  CHECK(loss.item() == doctest::Approx(2.1925715015342178).epsilon(1e-14));
}

TEST_CASE("cross_entropy_soft: gradients for logits and targets") {
  auto f = [](auto& x) { return cross_entropy_soft(x[0], x[1]); };
  check_op("cross_entropy_soft", f, {leaf({4, 5}, 5, -3, 3), leaf({4, 5}, 6, 0.05, 1)});
  check_op("cross_entropy_soft logits only", f, {leaf({4, 5}, 7, -3, 3), random_tensor({4, 5}, 8, 0.05, 1)});
  check_op("cross_entropy_soft targets only", f, {random_tensor({4, 5}, 9, -3, 3), leaf({4, 5}, 10, 0.05, 1)});
  check_op("cross_entropy_soft large", f, {leaf({3, 4}, 11, -50, 50), leaf({3, 4}, 12, 0.05, 1)});
}

TEST_CASE("mse_loss: value and gradients") {
  Tensor loss = mse_loss(from_vector<double>({1, 2, 3}, {3}), from_vector<double>({1.5, 0, 3}, {3}));
  CHECK(loss.shape().empty());
  CHECK(loss.item() == doctest::Approx(1.4166666666666667).epsilon(1e-14));
  auto f = [](auto& x) { return mse_loss(x[0], x[1]); };
  check_op("mse_loss", f, {leaf({2, 3, 4}, 13), leaf({2, 3, 4}, 14)});
  check_op("mse_loss a only", f, {leaf({5}, 15), random_tensor({5}, 16)});
  check_op("mse_loss same input", [](auto& x) { return mse_loss(x[0], x[0]); }, {leaf({3, 2}, 17)});
}

TEST_CASE("losses: bad arguments name the op, the shapes and the bad target") {
  Tensor logits = zeros({2, 3}, DType::f64);
  CHECK_THROWS_WITH(cross_entropy(logits, from_vector<int64_t>({0, 1, 2}, {3})),
                    doctest::Contains("cross_entropy: targets i64[3] cpu do not match logits f64[2, 3] cpu"));
  CHECK_THROWS_WITH(cross_entropy(logits, from_vector<int64_t>({0, 3}, {2})),
                    doctest::Contains("cross_entropy: target 3 at position 1 is out of range for 3 classes"));
  CHECK_THROWS_WITH(cross_entropy(logits, from_vector<int32_t>({-1, 0}, {2})),
                    doctest::Contains("cross_entropy: target -1 at position 0 is out of range"));
  CHECK_THROWS_WITH(cross_entropy(logits, Tensor()), doctest::Contains("cross_entropy: targets is an undefined tensor"));
  CHECK_THROWS_WITH(cross_entropy(logits, from_vector<double>({0, 1}, {2})),
                    doctest::Contains("cross_entropy: targets must be i64 or i32 class indices, got f64[2] cpu"));
  CHECK_THROWS_WITH(cross_entropy(zeros({2, 3}, DType::i64), from_vector<int64_t>({0, 1}, {2})),
                    doctest::Contains("cross_entropy: expected an f32 or f64 tensor, got i64[2, 3]"));
  CHECK_THROWS_WITH(cross_entropy(zeros({3}, DType::f64), from_vector<int64_t>({0}, {1})),
                    doctest::Contains("cross_entropy: logits must be [N, C], got f64[3] cpu"));
  CHECK_THROWS_WITH(cross_entropy(zeros({0, 3}, DType::f64), zeros({0}, DType::i64)),
                    doctest::Contains("cross_entropy: logits f64[0, 3] cpu are empty"));
  CHECK_THROWS_WITH(cross_entropy_soft(logits, zeros({2, 4}, DType::f64)),
                    doctest::Contains("cross_entropy_soft: target_probs f64[2, 4] cpu do not match logits f64[2, 3]"));
  CHECK_THROWS_WITH(cross_entropy_soft(logits, zeros({2, 3}, DType::f32)),
                    doctest::Contains("cross_entropy_soft: dtype mismatch"));
  CHECK_THROWS_WITH(mse_loss(zeros({2, 3}, DType::f64), zeros({3, 2}, DType::f64)),
                    doctest::Contains("mse_loss: shapes differ: f64[2, 3] cpu vs f64[3, 2] cpu"));
  CHECK_THROWS_WITH(mse_loss(zeros({0}, DType::f64), zeros({0}, DType::f64)),
                    doctest::Contains("mse_loss: inputs f64[0] cpu are empty"));
  CHECK_THROWS_WITH(mse_loss(zeros({2}, DType::i32), zeros({2}, DType::i32)),
                    doctest::Contains("mse_loss: expected an f32 or f64 tensor"));
}
