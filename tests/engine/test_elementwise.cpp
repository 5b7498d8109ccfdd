#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>

#include "engine/ops/elementwise.h"
#include "engine/ops/reduce.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return random_tensor(shape, seed, low, high).set_requires_grad(true);
}
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("elementwise: broadcast shapes") {
  CHECK(broadcast_shape("add", {2, 3, 4}, {4}) == Shape{2, 3, 4});
  CHECK(broadcast_shape("add", {2, 1, 4}, {3, 1}) == Shape{2, 3, 4});
  CHECK(broadcast_shape("add", {}, {5}) == Shape{5});
  CHECK(broadcast_shape("add", {0, 1}, {3}) == Shape{0, 3});
}

TEST_CASE("elementwise: binary values on the same-shape, bias-row and strided paths") {
  Tensor a = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = from_vector<double>({10, 20, 30}, {3});
  Tensor col = from_vector<double>({2, 4}, {2, 1});
  CHECK(values(a + a) == std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK(values(a + row) == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(values(row - a) == std::vector<double>{9, 18, 27, 6, 15, 24});
  CHECK(values(a * col) == std::vector<double>{2, 4, 6, 16, 20, 24});
  CHECK(values(a / col) == std::vector<double>{0.5, 1, 1.5, 1, 1.25, 1.5});
  Tensor outer = from_vector<double>({1, 2, 3}, {1, 3}) * col;  // [1, 3] * [2, 1]
  CHECK(outer.shape() == Shape{2, 3});
  CHECK(values(outer) == std::vector<double>{2, 4, 6, 4, 8, 12});
  // b = [1, 1, 3] against a = [2, 3]: the result takes b's rank.
  Tensor lifted = a + from_vector<double>({1, 1, 1}, {1, 1, 3});
  CHECK(lifted.shape() == Shape{1, 2, 3});
  CHECK(values(lifted) == std::vector<double>{2, 3, 4, 5, 6, 7});
  Tensor s = scalar_tensor(2.0, DType::f64);
  CHECK(values(a * s) == std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK((s - s).shape() == Shape{});
  CHECK((zeros({0, 3}, DType::f64) + row).shape() == Shape{0, 3});
}

TEST_CASE("elementwise: tensor-scalar and unary values") {
  Tensor a = from_vector<float>({1, 2, 4}, {3});
  CHECK(values(a + 1) == std::vector<double>{2, 3, 5});
  CHECK(values(1 + a) == std::vector<double>{2, 3, 5});
  CHECK(values(a - 1) == std::vector<double>{0, 1, 3});
  CHECK(values(10 - a) == std::vector<double>{9, 8, 6});
  CHECK(values(a * 3) == std::vector<double>{3, 6, 12});
  CHECK(values(3 * a) == std::vector<double>{3, 6, 12});
  CHECK(values(a / 2) == std::vector<double>{0.5, 1, 2});
  CHECK(values(8 / a) == std::vector<double>{8, 4, 2});
  CHECK(values(-a) == std::vector<double>{-1, -2, -4});
  CHECK(values(sqrt(a)) == std::vector<double>{1, std::sqrt(2.0f), 2});
  CHECK(values(pow(a, 2.0)) == std::vector<double>{1, 4, 16});
  CHECK(values(pow(a, 0.5))[1] == doctest::Approx(std::sqrt(2.0)).epsilon(1e-7));
  CHECK(values(exp(zeros({2}))) == std::vector<double>{1, 1});
  CHECK(values(log(ones({2}))) == std::vector<double>{0, 0});
  CHECK((a + 1).dtype() == DType::f32);
}

TEST_CASE("elementwise: gradients of binary ops with broadcasting") {
  auto add_f = [](auto& x) { return add(x[0], x[1]); };
  auto sub_f = [](auto& x) { return sub(x[0], x[1]); };
  auto mul_f = [](auto& x) { return mul(x[0], x[1]); };
  auto div_f = [](auto& x) { return div(x[0], x[1]); };
  check_op("add same shape", add_f, {leaf({3, 4}, 1), leaf({3, 4}, 2)});
  check_op("add [2,3,4]+[4]", add_f, {leaf({2, 3, 4}, 3), leaf({4}, 4)});
  check_op("add [3,4]+[1,1,4]", add_f, {leaf({3, 4}, 5), leaf({1, 1, 4}, 6)});
  check_op("add [4]+[2,3,4]", add_f, {leaf({4}, 7), leaf({2, 3, 4}, 8)});
  check_op("add [2,3]+[] scalar tensor", add_f, {leaf({2, 3}, 9), leaf({}, 10)});
  check_op("sub same shape", sub_f, {leaf({5}, 11), leaf({5}, 12)});
  check_op("sub [2,1,4]-[3,1]", sub_f, {leaf({2, 1, 4}, 13), leaf({3, 1}, 14)});
  check_op("sub [2,3,4]-[3,4]", sub_f, {leaf({2, 3, 4}, 15), leaf({3, 4}, 16)});
  check_op("mul same shape", mul_f, {leaf({2, 5}, 17), leaf({2, 5}, 18)});
  check_op("mul [2,3,4]*[3,1]", mul_f, {leaf({2, 3, 4}, 19), leaf({3, 1}, 20)});
  check_op("mul [2,3,4]*[4]", mul_f, {leaf({2, 3, 4}, 21), leaf({4}, 22)});
  check_op("mul [1,3]*[2,1]", mul_f, {leaf({1, 3}, 23), leaf({2, 1}, 24)});
  check_op("mul x*x", [](auto& x) { return mul(x[0], x[0]); }, {leaf({3, 3}, 25)});
  check_op("div same shape", div_f, {leaf({3, 4}, 26), leaf({3, 4}, 27, 0.5, 2.0)});
  check_op("div [2,3,4]/[4]", div_f, {leaf({2, 3, 4}, 28), leaf({4}, 29, 0.5, 2.0)});
  check_op("div [2,3,4]/[3,1]", div_f, {leaf({2, 3, 4}, 30), leaf({3, 1}, 31, -2.0, -0.5)});
  check_op("div [4]/[2,3,4]", div_f, {leaf({4}, 32), leaf({2, 3, 4}, 33, 0.5, 2.0)});
  check_op("mul frozen right operand", mul_f, {leaf({2, 3, 4}, 34), random_tensor({3, 1}, 35)});
  check_op("div frozen left operand", div_f, {random_tensor({2, 3}, 36), leaf({3}, 37, 0.5, 2.0)});
}

TEST_CASE("elementwise: expand copies x along its size-1 axes, its gradient sums over them") {
  const Tensor x = from_vector<float>({1.5f, -2.0f, 0.25f}, {1, 1, 3});
  const std::vector<float> expanded = expand(x, {2, 1, 3}).to_vector<float>();
  CHECK(expanded == std::vector<float>{1.5f, -2.0f, 0.25f, 1.5f, -2.0f, 0.25f});
  CHECK(expand(x, {1, 1, 3}).to_vector<float>() == x.to_vector<float>());
  check_op("expand [1,1,3] to [4,1,3]", [](auto& t) { return expand(t[0], {4, 1, 3}); }, {leaf({1, 1, 3}, 90)});
  check_op("expand [3,1] to [2,3,5]", [](auto& t) { return expand(t[0], {2, 3, 5}); }, {leaf({3, 1}, 91)});
  CHECK_THROWS_WITH(expand(x, {2, 1, 4}), doctest::Contains("expand: cannot broadcast"));
  CHECK_THROWS_WITH(expand(from_vector<float>({1, 2}, {2, 1}), {2}),
                    doctest::Contains("does not broadcast to [2] without growing it"));
}

TEST_CASE("elementwise: gradients of tensor-scalar forms, unary ops and operators") {
  check_op("add scalar", [](auto& x) { return add(x[0], 2.5); }, {leaf({2, 3}, 40)});
  check_op("sub scalar", [](auto& x) { return sub(x[0], 1.5); }, {leaf({2, 3}, 41)});
  check_op("rsub scalar", [](auto& x) { return rsub(3.0, x[0]); }, {leaf({2, 3}, 42)});
  check_op("mul scalar", [](auto& x) { return mul(x[0], -2.0); }, {leaf({2, 3}, 43)});
  check_op("div scalar", [](auto& x) { return div(x[0], 4.0); }, {leaf({2, 3}, 44)});
  check_op("rdiv scalar", [](auto& x) { return rdiv(2.0, x[0]); }, {leaf({2, 3}, 45, 0.5, 2.0)});
  check_op("neg", [](auto& x) { return neg(x[0]); }, {leaf({2, 3}, 46)});
  check_op("exp", [](auto& x) { return exp(x[0]); }, {leaf({2, 3}, 47)});
  check_op("log", [](auto& x) { return log(x[0]); }, {leaf({2, 3}, 48, 0.5, 2.0)});
  check_op("sqrt", [](auto& x) { return sqrt(x[0]); }, {leaf({2, 3}, 49, 0.5, 2.0)});
  check_op("pow 2.5", [](auto& x) { return pow(x[0], 2.5); }, {leaf({2, 3}, 50, 0.5, 2.0)});
  check_op("pow -1.5", [](auto& x) { return pow(x[0], -1.5); }, {leaf({2, 3}, 51, 0.5, 2.0)});
  check_op("pow 3 on mixed signs", [](auto& x) { return pow(x[0], 3.0); }, {leaf({2, 3}, 52)});
  check_op("operators", [](auto& x) { return (x[0] + x[1]) * x[0] - x[1] / 2.0 + 1.0 / (3.0 - x[0]) - -x[1]; },
           {leaf({2, 3}, 53), leaf({3}, 54)});
}

TEST_CASE("elementwise: pow with exponent 0 has a zero gradient, also at x = 0 (PyTorch)") {
  Tensor x = from_vector<double>({0, 2}, {2}).set_requires_grad(true);
  Tensor y = pow(x, 0.0);
  CHECK(values(y) == std::vector<double>{1, 1});
  sum(y).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 0});
}

TEST_CASE("elementwise: a bias gradient over many rows is exact and thread-count independent") {
  // [300, 1030] * [1030]: several row blocks and column tiles in the column-sum kernel.
  const Tensor a = random_tensor({300, 1030}, 60);
  auto bias_grad = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    Tensor b = random_tensor({1030}, 61).set_requires_grad(true);
    sum(mul(a, b)).backward();
    omp_set_num_threads(saved);
    return values(b.grad());
  };
  const auto one = bias_grad(1), two = bias_grad(2);
  CHECK(one == two);
  const auto x = values(a);
  for (int64_t c : {0, 517, 1029}) {
    double expected = 0;
    for (int64_t r = 0; r < 300; ++r) expected += x[static_cast<size_t>(r * 1030 + c)];
    CHECK(one[static_cast<size_t>(c)] == doctest::Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("elementwise: errors name the op and both shapes") {
  Tensor a = zeros({2, 3}, DType::f64);
  CHECK_THROWS_WITH(add(a, zeros({4}, DType::f64)),
                    doctest::Contains("add: cannot broadcast shapes [2, 3] and [4]: sizes 3 and 4 differ"));
  CHECK_THROWS_WITH(mul(zeros({2, 1, 4}, DType::f64), zeros({3, 2}, DType::f64)),
                    doctest::Contains("mul: cannot broadcast shapes [2, 1, 4] and [3, 2]"));
  CHECK_THROWS_WITH(sub(a, zeros({2, 3}, DType::f32)),
                    doctest::Contains("sub: dtype mismatch between f64[2, 3] cpu and f32[2, 3] cpu"));
  CHECK_THROWS_WITH(div(zeros({2}, DType::i64), zeros({2}, DType::i64)),
                    doctest::Contains("div: expected an f32 or f64 tensor, got i64[2] cpu"));
  CHECK_THROWS_WITH(exp(zeros({2}, DType::i32)), doctest::Contains("exp: expected an f32 or f64 tensor"));
  CHECK_THROWS_WITH(rdiv(1.0, zeros({2}, DType::u8)), doctest::Contains("rdiv: expected an f32 or f64 tensor"));
  CHECK_THROWS_WITH(add(a, Tensor()), doctest::Contains("add: input is an undefined tensor"));
  CHECK_THROWS_WITH(log(Tensor()), doctest::Contains("log: input is an undefined tensor"));
}
