// Reductions on the device against the CPU: sum, mean and max over all elements and along each
// axis (with keepdim), their gradients, and argmax, whose integer result must be identical:
// the first maximum on ties, NaN counting as the largest (PyTorch).
//
// Tolerances. Both sides sum f32 data in double and round once, so sums differ from the CPU by at
// most one float ulp (a different summation order in double); 1e-5 relative plus 1e-6 absolute
// leaves a wide margin. f64: 1e-12 (the order of a double sum of up to 151k terms of size ≤ 1).
// max, argmax and the max gradient pick elements, so they are compared exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/ops.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

constexpr double f32_atol = 1e-6, f32_rtol = 1e-5, f64_tol = 1e-12;

// Values from {0, 0.25, ..., 1.75}: ties everywhere.
Tensor tied(const Shape& shape, uint64_t seed) {
  std::vector<float> values;
  for (double v : random_tensor(shape, seed, 0, 2).to_vector<double>()) values.push_back(std::floor(v * 4) / 4);
  return from_vector(values, shape).set_requires_grad(true);
}

// sum, mean and max of x over all elements, and the same times x (x's gradient written twice).
void check_all_elements(const Tensor& x, double atol, double rtol) {
  const std::string shape = x.str();
  check_cuda_parity("sum of " + shape, [](const auto& in) { return sum(in[0]); }, {x}, atol, rtol);
  check_cuda_parity("mean of " + shape, [](const auto& in) { return mean(in[0]); }, {x}, atol, rtol);
  check_cuda_parity("max of " + shape, [](const auto& in) { return max(in[0]); }, {x}, 0, 0);
  check_cuda_parity("sum of " + shape + " times x", [](const auto& in) { return mul(in[0], sum(in[0])); }, {x}, atol,
                    rtol);
}

// sum, mean, max and argmax of x along `axis`, with and without keepdim.
void check_axis(const Tensor& x, int64_t axis, double atol, double rtol) {
  for (bool keepdim : {false, true}) {
    const std::string what = x.str() + " axis " + std::to_string(axis) + (keepdim ? " keepdim" : "");
    check_cuda_parity("sum of " + what, [&](const auto& in) { return sum(in[0], axis, keepdim); }, {x}, atol, rtol);
    check_cuda_parity("mean of " + what, [&](const auto& in) { return mean(in[0], axis, keepdim); }, {x}, atol, rtol);
    check_cuda_parity("max of " + what, [&](const auto& in) { return max(in[0], axis, keepdim); }, {x}, 0, 0);
    check_cuda_forward_parity("argmax of " + what, [&](const auto& in) { return argmax(in[0], axis, keepdim); }, {x});
  }
  // x used again after the reduction: its gradient buffer is written twice.
  const std::string what = x.str() + " axis " + std::to_string(axis);
  check_cuda_parity("x times its max along " + what, [&](const auto& in) { return mul(in[0], max(in[0], axis, true)); },
                    {x}, atol, rtol);
  check_cuda_parity("x times its mean along " + what,
                    [&](const auto& in) { return mul(in[0], mean(in[0], axis, true)); }, {x}, atol, rtol);
}

// A long 1-D row with a tie of the maximum far apart and NaNs placed at `nans` (none if empty).
Tensor long_row(int64_t n, const std::vector<int64_t>& maxima, const std::vector<int64_t>& nans) {
  std::vector<float> values;
  for (double v : random_tensor({n}, 77, -1, 1).to_vector<double>()) values.push_back(static_cast<float>(v));
  for (int64_t i : maxima) values[static_cast<size_t>(i)] = 5.0f;
  for (int64_t i : nans) values[static_cast<size_t>(i)] = std::numeric_limits<float>::quiet_NaN();
  return from_vector(values, {n});
}

}  // namespace

TEST_CASE("cuda reduce: sum, mean and max over all elements match the CPU") {
  check_all_elements(leaf({1}, 1), f32_atol, f32_rtol);
  check_all_elements(leaf({3}, 2), f32_atol, f32_rtol);
  check_all_elements(leaf({}, 3), f32_atol, f32_rtol);
  check_all_elements(leaf({197, 768}, 4), f32_atol, f32_rtol);  // two passes through scratch
}

TEST_CASE("cuda reduce: sum, mean, max and argmax along an axis match the CPU") {
  const Tensor wide = leaf({197, 768}, 11);
  for (int64_t axis : {0, 1, -1}) check_axis(wide, axis, f32_atol, f32_rtol);
  const Tensor small = leaf({3, 197}, 12);
  for (int64_t axis : {0, 1, -1}) check_axis(small, axis, f32_atol, f32_rtol);
  check_axis(leaf({2, 3, 64}, 13), 1, f32_atol, f32_rtol);     // short runs: a thread per output
  check_axis(leaf({197, 3}, 14), 0, f32_atol, f32_rtol);       // runs strided by 3
  check_axis(leaf({3, 2304}, 15), 1, f32_atol, f32_rtol);      // long contiguous rows
  check_axis(leaf({4, 197, 64}, 16), 1, f32_atol, f32_rtol);   // strided runs in chunks (two passes)
}

TEST_CASE("cuda reduce: max and argmax take the first maximum on ties") {
  for (int64_t axis : {0, 1}) {
    check_axis(tied({197, 768}, 21), axis, f32_atol, f32_rtol);
    check_axis(tied({3, 197}, 22), axis, f32_atol, f32_rtol);
  }
  check_axis(tied({197 * 768}, 23), 0, f32_atol, f32_rtol);  // one long run: per-chunk maxima, then the first
  check_all_elements(tied({197, 768}, 24), f32_atol, f32_rtol);
}

TEST_CASE("cuda reduce: argmax of a long row with far-apart ties and NaNs") {
  const int64_t n = 197 * 768;
  // The later copies of the maximum sit in later chunks (and first in a chunk of their own).
  const Tensor ties = long_row(n, {n / 3, n / 3 + 1, n / 2, n - 1}, {});
  check_cuda_forward_parity("argmax, ties", [](const auto& in) { return argmax(in[0], 0); }, {ties});
  check_cuda_forward_parity("max, ties", [](const auto& in) { return max(in[0]); }, {ties});
  // NaN beats the maximum; the first NaN wins over a later one.
  const Tensor nans = long_row(n, {5, n - 1}, {n / 2, 7});
  check_cuda_forward_parity("argmax, NaNs", [](const auto& in) { return argmax(in[0], 0); }, {nans});
  CHECK(argmax(nans.to(Device::cuda()), 0).item() == 7);
  // NaNs in a matrix: along both axes, including rows / columns with several NaNs.
  std::vector<float> values = random_tensor({3, 197}, 78, -1, 1).to_vector<float>();
  for (size_t i : {5u, 9u, 200u, 202u, 400u, 590u}) values[i] = std::numeric_limits<float>::quiet_NaN();
  const Tensor matrix = from_vector(values, {3, 197});
  for (int64_t axis : {0, 1})
    check_cuda_forward_parity("argmax with NaNs, axis " + std::to_string(axis),
                              [axis](const auto& in) { return argmax(in[0], axis); }, {matrix});
}

TEST_CASE("cuda reduce: nearest_from_products gives the CPU's indices: ties, clamped distances and NaNs") {
  const auto nearest = [](const auto& in) { return nearest_from_products(in[0], in[1], in[2]); };
  // m below, at and above a warp's width, and far above it (k-means' K = 1000).
  for (const auto& [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {7, 3}, {37, 32}, {130, 70}, {9, 1000}}) {
    CAPTURE(n);
    CAPTURE(m);
    // Products and norms in quarter steps: equal distances everywhere. Point norms below 2·p give
    // negative distances, clamped to 0 (ties at 0 too).
    const auto quarters = [](const Shape& shape, uint64_t seed, double low, double high, DType dtype) {
      std::vector<double> values;
      for (double v : random_tensor(shape, seed, low, high).to_vector<double>())
        values.push_back(std::floor(v * 4) / 4);
      return from_vector(values, shape).to(dtype);
    };
    const Tensor products = quarters({n, m}, 31, -1, 1, DType::f32);
    const Tensor point_norms = quarters({n}, 32, 0, 2, DType::f64), centre_norms = quarters({m}, 33, 0, 2, DType::f64);
    check_cuda_forward_parity("nearest_from_products [" + std::to_string(n) + ", " + std::to_string(m) + "]", nearest,
                              {products, point_norms, centre_norms});
  }
  // Hand-made rows: point i's distances are norm − 2p + c_norm.
  //   row 0: distances 3, 1, 1, 2 → 1 (the first of a tie);
  //   row 1: distances −1 (clamped to 0), 0, NaN (0 too), −2 → 0;
  //   row 2: a distinct minimum at the last centre → 3.
  const Tensor products = from_vector<float>({0, 1, 0.5f, 0.5f, 1, 0.5f, std::nanf(""), 1.5f, 0, 0, 0, 2}, {3, 4});
  const Tensor point_norms = from_vector<double>({3, 1, 5}, {3});
  const Tensor centre_norms = from_vector<double>({0, 0, -1, 0}, {4});
  const std::vector<int64_t> expected = {1, 0, 3};
  CHECK(nearest_from_products(products, point_norms, centre_norms).to_vector<int64_t>() == expected);
  CHECK(nearest_from_products(products.to(Device::cuda()), point_norms.to(Device::cuda()),
                              centre_norms.to(Device::cuda()))
            .to_vector<int64_t>() == expected);
  CHECK_THROWS_WITH(nearest_from_products(products, centre_norms, centre_norms),
                    doctest::Contains("expected f32 products [n, m >= 1] with f64 norms [n] and [m]"));
  CHECK_THROWS_WITH(nearest_from_products(products, point_norms.to(Device::cuda()), centre_norms),
                    doctest::Contains("must be on one device"));
}

// Sums read 16-byte packs: of outputs when the reduced axis is strided (inner % 4 == 0), of
// positions when it is contiguous (then a length that is no multiple of 4 leaves a tail, and a
// long one is split into chunks that start at multiples of 4). A view one element into its
// storage is not 16-byte aligned and is summed element by element.
TEST_CASE("cuda reduce: sums in 16-byte packs, with tails, chunks and misaligned views") {
  check_all_elements(leaf({3, 4001}, 51), f32_atol, f32_rtol);  // two chunks, a tail of 3
  check_axis(leaf({5, 1028}, 52), 1, f32_atol, f32_rtol);        // rows of 257 packs, a block each
  const int64_t rows = 197, cols = 64;
  const Tensor flat = leaf({1 + rows * cols}, 53);
  auto view = [](const Tensor& x) { return reshape(slice(x, 0, 1, 1 + rows * cols), {rows, cols}); };
  check_cuda_parity("sum of a misaligned view", [&](const auto& in) { return sum(view(in[0])); }, {flat}, f32_atol,
                    f32_rtol);
  for (int64_t axis : {0, 1})
    check_cuda_parity("sum of a misaligned view along " + std::to_string(axis),
                      [&](const auto& in) { return sum(view(in[0]), axis); }, {flat}, f32_atol, f32_rtol);
}

TEST_CASE("cuda reduce: the double kernels match the CPU") {
  check_all_elements(leaf({197, 768}, 31, DType::f64), f64_tol, f64_tol);
  check_axis(leaf({3, 197}, 32, DType::f64), 1, f64_tol, f64_tol);
  check_axis(leaf({197, 64}, 33, DType::f64), 0, f64_tol, f64_tol);
}

TEST_CASE("cuda reduce: the full grid of shapes" * doctest::test_suite("slow")) {
  for (int64_t rows : {1, 3, 197})
    for (int64_t cols : {1, 3, 64, 197, 768, 2304}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const Tensor x = leaf({rows, cols}, 41);
      check_all_elements(x, f32_atol, f32_rtol);
      for (int64_t axis : {0, 1}) check_axis(x, axis, f32_atol, f32_rtol);
      check_axis(tied({rows, cols}, 42), 1, f32_atol, f32_rtol);
      check_axis(leaf({2, rows, cols}, 43), 1, f32_atol, f32_rtol);
    }
  check_axis(leaf({5000, 3}, 44), 0, f32_atol, f32_rtol);
  check_all_elements(leaf({1000003}, 45), f32_atol, f32_rtol);
}

// f32 values whose exponents span 2^-30 to 2^30: sums of them in double round, so another order of
// the additions shows in the bits.
Tensor wide_range(const Shape& shape, uint64_t seed) {
  const std::vector<double> mantissas = random_tensor(shape, seed, -1, 1).to_vector<double>();
  const std::vector<double> exponents = random_tensor(shape, seed + 1, -30, 30).to_vector<double>();
  std::vector<float> values;
  for (size_t i = 0; i < mantissas.size(); ++i)
    values.push_back(static_cast<float>(std::ldexp(mantissas[i], static_cast<int>(exponents[i]))));
  return from_vector(values, shape);
}

// k-means' passes over the points: the device must give the CPU's bits (each sum in one order,
// each step rounded alike).
TEST_CASE("cuda reduce: k-means' exact distances and centre sums give the CPU's bits") {
  for (const auto& [n, dim, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {37, 33, 7}, {130, 768, 10}}) {
    CAPTURE(n);
    CAPTURE(dim);
    const Tensor points = wide_range({n, dim}, 81);
    const Tensor centres = random_tensor({k, dim}, 82, -3, 3, DType::f64);
    std::vector<int64_t> labels, members, offsets(static_cast<size_t>(k + 1), 0);
    for (int64_t i = 0; i < n; ++i) labels.push_back((i * 5 + i / 3) % k);
    // Members grouped by cluster, in index order, except the last cluster's, listed backwards.
    for (int64_t c = 0; c < k; ++c) {
      std::vector<int64_t> group;
      for (int64_t i = 0; i < n; ++i)
        if (labels[static_cast<size_t>(i)] == c) group.push_back(i);
      if (c == k - 1) std::reverse(group.begin(), group.end());
      members.insert(members.end(), group.begin(), group.end());
      offsets[static_cast<size_t>(c + 1)] = static_cast<int64_t>(members.size());
    }
    const Tensor label_tensor = from_vector(labels, {n}), member_tensor = from_vector(members, {n}),
                 offset_tensor = from_vector(offsets, {k + 1});
    const Device gpu = Device::cuda();
    CHECK(assigned_squared_distances(points.to(gpu), label_tensor.to(gpu), centres.to(gpu)).to_vector<double>() ==
          assigned_squared_distances(points, label_tensor, centres).to_vector<double>());
    for (const auto& [first, last] : {std::pair<int64_t, int64_t>{0, dim}, {dim / 3, dim}, {0, 0}}) {
      CAPTURE(first);
      CAPTURE(last);
      CHECK(cluster_sums(points.to(gpu), member_tensor.to(gpu), offset_tensor.to(gpu), first, last)
                .to_vector<double>() == cluster_sums(points, member_tensor, offset_tensor, first, last).to_vector<double>());
    }
  }
  const Tensor points = random_tensor({3, 2}, 83, -1, 1, DType::f32);
  CHECK_THROWS_WITH(assigned_squared_distances(points, from_vector<int64_t>({0, 0, 0}, {3}).to(Device::cuda()),
                                               random_tensor({1, 2}, 84, -1, 1, DType::f64)),
                    doctest::Contains("must be on one device"));
}
