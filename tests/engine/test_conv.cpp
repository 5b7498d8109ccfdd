#include <doctest/doctest.h>

#include <cmath>

#include "engine/ops/conv.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed) { return random_tensor(shape, seed).set_requires_grad(true); }

// Values ((i·step) mod m − shift) / 10: small exact decimals that PyTorch can reproduce.
Tensor pattern(const Shape& shape, int64_t step, int64_t m, int64_t shift) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((static_cast<int64_t>(i) * step) % m - shift) / 10;
  return from_vector(v, shape);
}

void check_close(const Tensor& got, const std::vector<double>& expected) {
  const auto v = got.to_vector<double>();
  REQUIRE(v.size() == expected.size());
  for (size_t i = 0; i < v.size(); ++i) CHECK_MESSAGE(std::fabs(v[i] - expected[i]) < 1e-12, "element " << i);
}
}  // namespace

// Reference: torch.nn.functional.conv2d(x, w, b, stride=2) in float64 with x = pattern(7, 11, 5),
// w = pattern(5, 13, 6), b[o] = 0.1·o − 0.2, and output gradient pattern(3, 7, 3).
TEST_CASE("conv2d_patch: forward and gradients match PyTorch for B=2, C=3, H=W=4, P=2, O=5") {
  Tensor x = pattern({2, 3, 4, 4}, 7, 11, 5).set_requires_grad(true);
  Tensor w = pattern({5, 3, 2, 2}, 5, 13, 6).set_requires_grad(true);
  Tensor b = from_vector<double>({-0.2, -0.1, 0.0, 0.1, 0.2}, {5}).set_requires_grad(true);
  Tensor y = conv2d_patch(x, w, b);
  CHECK(y.shape() == Shape{2, 5, 2, 2});
  check_close(y, {0.63,  -0.42, 0.06, -0.33, 0.18, -0.5,  0.21,  0.19, -0.53, 0.2,   -0.03, -0.07, 0.19,  -0.14,
                  -0.14, 0.19,  0.13, 0.17,  0.4,  -0.33, -0.48, 0.01, -0.28, -0.01, -0.19, -0.21, -0.27, -0.18,
                  0.49,  -0.43, 0.0,  -0.48, 0.52, 0.52,  -0.25, 0.52, -0.23, 0.69,  0.15,  0.74});
  run_backward(y, pattern({2, 5, 2, 2}, 3, 7, 3), false);
  check_close(
      x.grad(),
      {0.12,  0.12,  -0.08, 0.1,   -0.27, 0.38,  -0.11, -0.19, -0.28, 0.08,  -0.06, 0.13,  0.05,  0.15,  -0.07, -0.14,
       -0.27, -0.27, 0.25,  -0.09, 0.38,  -0.27, -0.17, 0.27,  -0.14, 0.09,  0.31,  -0.15, 0.19,  -0.1,  -0.22, 0.23,
       0.12,  0.12,  -0.07, 0.11,  -0.27, 0.38,  -0.1,  -0.18, -0.26, 0.1,   -0.1,  0.09,  0.07,  0.17,  -0.11, -0.18,
       0.11,  -0.07, 0.12,  0.12,  0.27,  -0.17, -0.27, 0.38,  -0.08, 0.1,   -0.28, 0.08,  -0.11, -0.19, 0.05,  0.15,
       -0.09, 0.25,  -0.27, -0.27, -0.19, -0.11, 0.38,  -0.27, 0.25,  -0.09, -0.14, 0.09,  -0.17, 0.27,  0.19,  -0.1,
       0.1,   -0.08, 0.12,  0.12,  0.26,  -0.18, -0.27, 0.38,  -0.07, 0.11,  -0.26, 0.1,   -0.1,  -0.18, 0.07,  0.17});
  check_close(w.grad(),
              {0.08,  0.08,  -0.03, 0.08,  0.08,  0.08,  0.08,  0.08,  0.08,  0.08,  -0.25, -0.03, 0.01,  0.2,  -0.11,
               -0.36, -0.36, 0.38,  0.4,   -0.18, -0.18, 0.01,  0.25,  -0.11, -0.06, 0.04,  0.23,  0.11,  0.11, -0.23,
               -0.26, -0.16, -0.16, -0.06, -0.09, 0.23,  0.01,  -0.19, -0.13, 0.44,  0.44,  -0.42, -0.36, 0.21, 0.21,
               0.01,  -0.15, -0.13, 0.01,  0.21,  -0.07, -0.42, -0.42, 0.44,  0.38,  -0.19, -0.19, 0.01,  0.28, -0.07});
  check_close(b.grad(), {0, -0.2, 0.3, -0.6, 0.6});
}

TEST_CASE("conv2d_patch: gradients with and without bias, non-square images, frozen weight") {
  check_op("conv2d_patch", [](auto& t) { return conv2d_patch(t[0], t[1], t[2]); },
           {leaf({2, 3, 4, 4}, 1), leaf({5, 3, 2, 2}, 2), leaf({5}, 3)});
  check_op("conv2d_patch no bias", [](auto& t) { return conv2d_patch(t[0], t[1]); },
           {leaf({1, 2, 6, 9}, 4), leaf({4, 2, 3, 3}, 5)});
  check_op("conv2d_patch frozen weight", [](auto& t) { return conv2d_patch(t[0], t[1], t[2]); },
           {leaf({3, 1, 2, 4}, 6), random_tensor({2, 1, 2, 2}, 7), random_tensor({2}, 8)});
  check_op("conv2d_patch P=1", [](auto& t) { return conv2d_patch(t[0], t[1], t[2]); },
           {leaf({2, 3, 2, 3}, 9), leaf({4, 3, 1, 1}, 10), leaf({4}, 11)});
}

TEST_CASE("conv2d_patch: argument errors name the op and the shapes") {
  Tensor x = zeros({2, 3, 4, 4}, DType::f64), w = zeros({5, 3, 2, 2}, DType::f64);
  CHECK_THROWS_WITH(conv2d_patch(zeros({2, 3, 5, 4}, DType::f64), w),
                    doctest::Contains("conv2d_patch: height and width of x f64[2, 3, 5, 4] cpu must be divisible by "
                                      "the patch size 2"));
  CHECK_THROWS_WITH(conv2d_patch(zeros({2, 3, 4, 6}, DType::f64), zeros({5, 3, 4, 4}, DType::f64)),
                    doctest::Contains("must be divisible by the patch size 4"));
  CHECK_THROWS_WITH(conv2d_patch(zeros({3, 4, 4}, DType::f64), w),
                    doctest::Contains("conv2d_patch: x must be [B, C, H, W], got f64[3, 4, 4] cpu"));
  CHECK_THROWS_WITH(conv2d_patch(x, zeros({5, 3, 2, 3}, DType::f64)),
                    doctest::Contains("weight must be [O, C, P, P] with P > 0, got f64[5, 3, 2, 3] cpu"));
  CHECK_THROWS_WITH(conv2d_patch(x, zeros({5, 3, 0, 0}, DType::f64)), doctest::Contains("with P > 0"));
  CHECK_THROWS_WITH(conv2d_patch(x, zeros({5, 2, 2, 2}, DType::f64)),
                    doctest::Contains("expects 2 input channels but x is f64[2, 3, 4, 4] cpu"));
  CHECK_THROWS_WITH(conv2d_patch(zeros({0, 3, 4, 4}, DType::f64), w), doctest::Contains("conv2d_patch: empty input"));
  CHECK_THROWS_WITH(conv2d_patch(x, w, zeros({4}, DType::f64)),
                    doctest::Contains("conv2d_patch: bias f64[4] cpu does not fit weight f64[5, 3, 2, 2] cpu"));
  CHECK_THROWS_WITH(conv2d_patch(x, w, zeros({5}, DType::f32)), doctest::Contains("conv2d_patch: dtype mismatch"));
  CHECK_THROWS_WITH(conv2d_patch(x, zeros({5, 3, 2, 2}, DType::f32)),
                    doctest::Contains("conv2d_patch: dtype mismatch"));
  CHECK_THROWS_WITH(conv2d_patch(zeros({2, 3, 4, 4}, DType::i64), zeros({5, 3, 2, 2}, DType::i64)),
                    doctest::Contains("conv2d_patch: expected an f32 or f64 tensor"));
  CHECK_THROWS_WITH(conv2d_patch(x, Tensor()), doctest::Contains("conv2d_patch: input is an undefined tensor"));
}
