#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "engine/ops/reduce.h"
#include "engine/ops/shape.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed) { return random_tensor(shape, seed).set_requires_grad(true); }
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> indices(const Tensor& t) { return t.to_vector<int64_t>(); }
// [[1, 2, 3], [4, 5, 6]]
Tensor matrix_123456() { return from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}); }
}  // namespace

TEST_CASE("reduce: sum and mean values and shapes") {
  const Tensor matrix = matrix_123456();
  Tensor s = sum(matrix);
  CHECK(s.shape() == Shape{});
  CHECK(s.item() == 21);
  CHECK(mean(matrix).item() == 3.5);
  CHECK(mean(from_vector<float>({1, 2, 3, 4}, {4})).item() == 2.5);
  CHECK(values(sum(matrix, 0)) == std::vector<double>{5, 7, 9});
  CHECK(values(sum(matrix, -1)) == std::vector<double>{6, 15});
  CHECK(values(mean(matrix, 1)) == std::vector<double>{2, 5});
  CHECK(values(mean(matrix, -2)) == std::vector<double>{2.5, 3.5, 4.5});
  CHECK(sum(matrix, 0).shape() == Shape{3});
  CHECK(sum(matrix, 0, true).shape() == Shape{1, 3});
  CHECK(mean(matrix, 1, true).shape() == Shape{2, 1});
  CHECK(max(matrix, -1, true).shape() == Shape{2, 1});
  CHECK(argmax(matrix, 0, true).shape() == Shape{1, 3});
  CHECK(sum(zeros({2, 3, 4}), 1).shape() == Shape{2, 4});
  // Size 0 elsewhere than the reduced axis is no empty reduction: the result is empty.
  CHECK(sum(zeros({0, 3}), 1).shape() == Shape{0});
  // A 0-dim tensor reduces along axis 0 or -1 (PyTorch).
  Tensor three = scalar_tensor(3.0, DType::f64);
  CHECK(sum(three, 0).shape() == Shape{});
  CHECK(sum(three, -1, true).item() == 3);
  CHECK(sum(matrix.to(DType::f32)).dtype() == DType::f32);
}

TEST_CASE("reduce: max and argmax take the first maximum on ties, NaN counting as largest") {
  Tensor ties = from_vector<double>({1, 3, 3, 2, 2, 1}, {2, 3});
  CHECK(indices(argmax(ties, 1)) == std::vector<int64_t>{1, 0});
  CHECK(indices(argmax(ties, 0)) == std::vector<int64_t>{1, 0, 0});
  CHECK(argmax(ties, 1).dtype() == DType::i64);
  CHECK(values(max(ties, 1)) == std::vector<double>{3, 2});
  CHECK(max(ties).item() == 3);
  CHECK(max(ties).shape() == Shape{});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor with_nan = from_vector<double>({1, nan, 5, nan}, {4});
  CHECK(indices(argmax(with_nan, 0)) == std::vector<int64_t>{1});
  CHECK(std::isnan(max(with_nan).item()));
}

TEST_CASE("reduce: the max gradient goes to the first maximal element") {
  Tensor x = from_vector<double>({1, 3, 3, 2, 2, 1}, {2, 3}).set_requires_grad(true);
  max(x).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 1, 0, 0, 0, 0});
  x.zero_grad();
  sum(max(x, 1)).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 1, 0, 1, 0, 0});
  x.zero_grad();
  sum(max(x, 0, true)).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 1, 1, 1, 0, 0});
  // A long vector: the chunked all-element scan still picks the first of equal maxima.
  std::vector<double> long_values(20000, 0.0);
  long_values[9000] = long_values[15000] = 1.0;
  Tensor y = from_vector<double>(long_values, {20000}).set_requires_grad(true);
  max(y).backward();
  const auto grad = values(y.grad());
  CHECK(grad[9000] == 1);
  CHECK(grad[15000] == 0);
}

TEST_CASE("reduce: gradients") {
  Tensor x = leaf({2, 3, 4}, 1);
  check_op("sum all", [](auto& v) { return sum(v[0]); }, {x});
  check_op("mean all", [](auto& v) { return mean(v[0]); }, {x});
  check_op("max all", [](auto& v) { return max(v[0]); }, {x});
  for (int64_t axis : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      const std::string tag = " axis " + std::to_string(axis) + (keepdim ? " keepdim" : "");
      check_op("sum" + tag, [=](auto& v) { return sum(v[0], axis, keepdim); }, {x});
      check_op("mean" + tag, [=](auto& v) { return mean(v[0], axis, keepdim); }, {x});
      check_op("max" + tag, [=](auto& v) { return max(v[0], axis, keepdim); }, {x});
    }
  }
  check_op("sum of a 0-dim tensor", [](auto& v) { return sum(v[0], 0); }, {leaf({}, 2)});
}

TEST_CASE("reduce: sum of 1e6 floats is bitwise the same on 1 and 2 threads") {
  const Tensor x = random_tensor({1000000}, 7, -1.0, 1.0, DType::f32);
  const Tensor rows = random_tensor({1000, 1000}, 8, -1.0, 1.0, DType::f32);
  auto run = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    const float all = static_cast<float>(sum(x).item());
    const auto along0 = sum(rows, 0).to_vector<float>();
    const auto along1 = mean(rows, 1).to_vector<float>();
    omp_set_num_threads(saved);
    return std::make_tuple(all, along0, along1);
  };
  const auto [all1, along0_1, along1_1] = run(1);
  const auto [all2, along0_2, along1_2] = run(2);
  CHECK(std::memcmp(&all1, &all2, sizeof(float)) == 0);
  CHECK(along0_1 == along0_2);
  CHECK(along1_1 == along1_2);
  // Accumulated in double: the f32 result is the correctly rounded double sum.
  const auto xs = x.to_vector<float>();
  double reference = 0;
  for (float v : xs) reference += v;
  CHECK(all1 == static_cast<float>(reference));
  // The last column sits in a partial tile of the axis-0 kernel.
  const auto r = rows.to_vector<float>();
  double column = 0;
  for (size_t k = 0; k < 1000; ++k) column += r[k * 1000 + 999];
  CHECK(along0_1[999] == static_cast<float>(column));
}

TEST_CASE("reduce: errors name the op, the axis and the shape") {
  const Tensor a = matrix_123456();
  CHECK_THROWS_WITH(sum(a, 2), doctest::Contains("sum: axis 2 is out of range for a tensor of rank 2"));
  CHECK_THROWS_WITH(mean(a, -3), doctest::Contains("mean: axis -3 is out of range"));
  CHECK_THROWS_WITH(max(a, 5), doctest::Contains("max: axis 5 is out of range"));
  CHECK_THROWS_WITH(argmax(a, -3), doctest::Contains("argmax: axis -3 is out of range"));
  CHECK_THROWS_WITH(sum(scalar_tensor(1.0), 1), doctest::Contains("sum: axis 1 is out of range"));
  CHECK_THROWS_WITH(sum(zeros({0})), doctest::Contains("sum: empty reduction: f32[0] cpu has no elements"));
  CHECK_THROWS_WITH(mean(zeros({2, 0})), doctest::Contains("mean: empty reduction"));
  CHECK_THROWS_WITH(max(zeros({0, 3})), doctest::Contains("max: empty reduction"));
  CHECK_THROWS_WITH(sum(zeros({2, 0}), 1),
                    doctest::Contains("sum: empty reduction over axis 1 of f32[2, 0] cpu"));
  CHECK_THROWS_WITH(mean(zeros({0, 3}), -2), doctest::Contains("mean: empty reduction over axis -2"));
  CHECK_THROWS_WITH(max(zeros({3, 0}), 1), doctest::Contains("max: empty reduction over axis 1"));
  CHECK_THROWS_WITH(argmax(zeros({0}), 0), doctest::Contains("argmax: empty reduction over axis 0"));
  CHECK_THROWS_WITH(sum(zeros({2}, DType::i64)), doctest::Contains("sum: expected an f32 or f64 tensor, got i64"));
  CHECK_THROWS_WITH(argmax(zeros({2}, DType::u8), 0), doctest::Contains("argmax: expected an f32 or f64 tensor"));
  CHECK_THROWS_WITH(max(Tensor()), doctest::Contains("max: input is an undefined tensor"));
}

namespace {

// k-means' inputs: f32 points [n, dim] whose exponents span 2^-30 to 2^30 (sums of them in double
// round, so another order of the additions shows in the bits), f64 centres [k, dim] and labels in
// [0, k).
struct KMeansInputs {
  Tensor points, centres, labels;
};
KMeansInputs kmeans_inputs(int64_t n, int64_t dim, int64_t k, uint64_t seed) {
  std::vector<int64_t> labels;
  for (double v : random_tensor({n}, seed + 2, 0, static_cast<double>(k)).to_vector<double>())
    labels.push_back(std::min(k - 1, static_cast<int64_t>(v)));
  const std::vector<double> mantissas = random_tensor({n, dim}, seed, -1, 1).to_vector<double>();
  const std::vector<double> exponents = random_tensor({n, dim}, seed + 3, -30, 30).to_vector<double>();
  std::vector<float> points;
  for (size_t i = 0; i < mantissas.size(); ++i)
    points.push_back(static_cast<float>(std::ldexp(mantissas[i], static_cast<int>(exponents[i]))));
  return {from_vector(points, {n, dim}), random_tensor({k, dim}, seed + 1, -3, 3, DType::f64),
          from_vector(labels, {n})};
}

}  // namespace

TEST_CASE("assigned_squared_distances: each point's sum over its dimensions in order, in double, as one loop gives") {
  for (const auto& [n, dim, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 3, 2}, {9, 768, 5}, {4001, 33, 7}}) {
    CAPTURE(n);
    CAPTURE(dim);
    const KMeansInputs in = kmeans_inputs(n, dim, k, 71);
    const std::vector<float> x = in.points.to_vector<float>();
    const std::vector<double> c = in.centres.to_vector<double>();
    const std::vector<int64_t> labels = in.labels.to_vector<int64_t>();
    std::vector<double> expected;
    for (int64_t i = 0; i < n; ++i) {
      double s = 0.0;
      for (int64_t d = 0; d < dim; ++d) {
        const double e = static_cast<double>(x[i * dim + d]) - c[labels[i] * dim + d];
        s += e * e;
      }
      expected.push_back(s);
    }
    CHECK(assigned_squared_distances(in.points, in.labels, in.centres).to_vector<double>() == expected);
  }
  const KMeansInputs in = kmeans_inputs(3, 4, 2, 72);
  CHECK_THROWS_WITH(assigned_squared_distances(in.points, in.labels, in.centres.to(DType::f32)),
                    doctest::Contains("expected f32 points [n, D], i64 labels [n] and f64 centres [k, D]"));
  CHECK_THROWS_WITH(assigned_squared_distances(in.points, slice(in.labels, 0, 0, 2), in.centres),
                    doctest::Contains("expected f32 points"));
}

TEST_CASE("cluster_sums: each cluster's members added in the order listed, over the columns asked for") {
  const int64_t n = 300, dim = 21, k = 6;
  const KMeansInputs in = kmeans_inputs(n, dim, k, 73);
  const std::vector<float> x = in.points.to_vector<float>();
  // Cluster 2 empty; the others' members in a scrambled order, since the order listed is the order added.
  std::vector<std::vector<int64_t>> groups(k);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = (i * 7) % (k - 1);
    groups[static_cast<size_t>(c >= 2 ? c + 1 : c)].push_back(i);
  }
  for (auto& g : groups) std::reverse(g.begin() + static_cast<int64_t>(g.size()) / 3, g.end());
  REQUIRE(groups[2].empty());
  std::vector<int64_t> members, offsets = {0};
  for (const auto& g : groups) {
    members.insert(members.end(), g.begin(), g.end());
    offsets.push_back(static_cast<int64_t>(members.size()));
  }
  const Tensor member_tensor = from_vector(members, {n}), offset_tensor = from_vector(offsets, {k + 1});
  for (const auto& [first, last] : {std::pair<int64_t, int64_t>{0, dim}, {3, 19}, {dim, dim}}) {
    CAPTURE(first);
    CAPTURE(last);
    std::vector<double> expected;
    for (const auto& g : groups)
      for (int64_t d = first; d < last; ++d) {
        double s = 0.0;
        for (int64_t j : g) s += x[j * dim + d];
        expected.push_back(s);
      }
    const Tensor sums = cluster_sums(in.points, member_tensor, offset_tensor, first, last);
    CHECK(sums.shape() == Shape{k, last - first});
    CHECK(sums.to_vector<double>() == expected);
  }
  CHECK_THROWS_WITH(cluster_sums(in.points, member_tensor, offset_tensor, 4, dim + 1),
                    doctest::Contains("columns [4, 22) are not within the points' 21"));
  CHECK_THROWS_WITH(cluster_sums(in.points, member_tensor.to(DType::f32), offset_tensor, 0, dim),
                    doctest::Contains("expected f32 points [n, D], i64 members [m] and i64 offsets [k + 1]"));
}
