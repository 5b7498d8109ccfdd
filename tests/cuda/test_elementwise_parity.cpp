// Element-wise ops on the device against the CPU: binary arithmetic in the three broadcast
// layouts (same shape, bias rows, general strides) with their gradient sums over broadcast
// dimensions, the tensor-scalar forms and the unary math, forward and backward.
//
// Tolerances. f32: the emulator runs the same float math as the CPU, and gradient sums run in
// double on both sides, so differences are a few ulp from the summation order at most; the real
// GPU's expf / logf / powf are within 2-4 ulp and it may fuse a multiply-add, so 1e-5 relative
// (plus 1e-6 absolute for values near zero) covers both with a wide margin. f64: 1e-12.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/ops.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

constexpr double f32_atol = 1e-6, f32_rtol = 1e-5, f64_tol = 1e-12;

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
};
const std::vector<BinaryCase> all_binary_ops = {{"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}};

// a ∘ b for each binary op, plus (a ∘ b) · b so that b's gradient buffer is written twice
// (overwrite, then accumulate). b is kept in [0.5, 2) so that div stays well conditioned.
void check_binary(const Shape& a_shape, const Shape& b_shape, uint64_t seed, DType dtype = DType::f32,
                  const std::vector<BinaryCase>& binary_ops = all_binary_ops) {
  const double atol = dtype == DType::f32 ? f32_atol : f64_tol, rtol = dtype == DType::f32 ? f32_rtol : f64_tol;
  const Tensor a = leaf(a_shape, seed, -1, 1, dtype), b = leaf(b_shape, seed + 1, 0.5, 2, dtype);
  const std::string shapes = shape_str(a_shape) + " and " + shape_str(b_shape) + " " + dtype_name(dtype);
  for (const BinaryCase& c : binary_ops) {
    check_cuda_parity(std::string(c.name) + " " + shapes, [&](const auto& x) { return c.op(x[0], x[1]); }, {a, b},
                      atol, rtol);
    check_cuda_parity(std::string(c.name) + " reusing b " + shapes,
                      [&](const auto& x) { return mul(c.op(x[0], x[1]), x[1]); }, {a, b}, atol, rtol);
  }
  // b on the left: the repeated or broadcast operand is x.
  check_cuda_parity("sub, swapped " + shapes, [](const auto& x) { return sub(x[1], x[0]); }, {a, b}, atol, rtol);
  check_cuda_parity("div, swapped " + shapes, [](const auto& x) { return div(x[1], x[0] + 3.0); }, {a, b}, atol,
                    rtol);
}

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  double low, high;  // input range: positive where the op needs it
};

const UnaryCase unary_ops[] = {
    {"neg", [](const Tensor& x) { return neg(x); }, -1, 1},
    {"exp", [](const Tensor& x) { return exp(x); }, -2, 2},
    {"log", [](const Tensor& x) { return log(x); }, 0.1, 3},
    {"sqrt", [](const Tensor& x) { return sqrt(x); }, 0.1, 3},
    {"pow 2.5", [](const Tensor& x) { return pow(x, 2.5); }, 0.1, 2},
    {"pow 3 of negatives", [](const Tensor& x) { return pow(x, 3.0); }, -2, 2},
    {"pow -1.5", [](const Tensor& x) { return pow(x, -1.5); }, 0.5, 2},
    {"pow 0", [](const Tensor& x) { return pow(x, 0.0); }, -1, 1},
    {"add scalar", [](const Tensor& x) { return x + 0.3; }, -1, 1},
    {"sub scalar", [](const Tensor& x) { return x - 0.3; }, -1, 1},
    {"rsub scalar", [](const Tensor& x) { return 0.3 - x; }, -1, 1},
    {"mul scalar", [](const Tensor& x) { return x * 0.1; }, -1, 1},  // 0.1 is not a float: rounded once
    {"div scalar", [](const Tensor& x) { return x / 0.7; }, -1, 1},
    {"rdiv scalar", [](const Tensor& x) { return 0.7 / x; }, 0.5, 2},
};

// Every unary op, and op(x) · x so that x's gradient buffer is written twice.
void check_unary(const Shape& shape, uint64_t seed, DType dtype = DType::f32) {
  const double atol = dtype == DType::f32 ? f32_atol : f64_tol, rtol = dtype == DType::f32 ? f32_rtol : f64_tol;
  for (const UnaryCase& c : unary_ops) {
    const Tensor x = leaf(shape, seed, c.low, c.high, dtype);
    const std::string name = std::string(c.name) + " " + shape_str(shape) + " " + dtype_name(dtype);
    check_cuda_parity(name, [&](const auto& in) { return c.op(in[0]); }, {x}, atol, rtol);
    check_cuda_parity(name + " times x", [&](const auto& in) { return mul(c.op(in[0]), in[0]); }, {x}, atol, rtol);
  }
}

}  // namespace

TEST_CASE("cuda elementwise: binary ops in every broadcast layout match the CPU") {
  check_binary({3, 197}, {3, 197}, 1);       // same shape
  // Bias rows: column sums over 197 rows (two ops to keep the emulated run short; the others
  // take the same kernels with their own partial derivatives in the shapes around it).
  check_binary({197, 768}, {768}, 3, DType::f32, {{"add", add}, {"mul", mul}});
  check_binary({19, 64}, {64}, 4);
  check_binary({3, 2304}, {2304}, 5);        // wide rows, few of them (short column sums)
  check_binary({197, 3}, {1, 1}, 7);         // a one-element b: rows layout with cols = 1
  check_binary({3, 64}, {3, 1}, 9);          // strided: b repeated along the last dim
  check_binary({2, 1, 64}, {3, 1}, 11);      // strided: both operands broadcast
  check_binary({4, 197, 3}, {197, 1}, 13);   // strided: b summed over 12 positions (one thread each)
  check_binary({20, 1, 64}, {5, 64}, 15);    // strided: b summed over a leading dim (blocks of 32 targets)
}

TEST_CASE("cuda elementwise: unary ops and scalar forms match the CPU") {
  check_unary({3, 197}, 21);
  check_unary({1}, 23);
}

// Operands one element into their storage are not 16-byte aligned: the kernels take the
// element-by-element path (the inputs are views of flat leaves, so gradients flow back
// through the views).
TEST_CASE("cuda elementwise: operands at odd offsets") {
  const int64_t rows = 3, cols = 64;
  auto view = [](const Tensor& flat) { return reshape(slice(flat, 0, 1, 1 + rows * cols), {rows, cols}); };
  const Tensor a = leaf({1 + rows * cols}, 61), b = leaf({1 + rows * cols}, 62, 0.5, 2), bias = leaf({cols}, 63);
  check_cuda_parity("mul, both misaligned", [&](const auto& x) { return mul(view(x[0]), view(x[1])); }, {a, b},
                    f32_atol, f32_rtol);
  check_cuda_parity("div, b misaligned", [&](const auto& x) { return div(x[0], view(x[1])); },
                    {leaf({rows, cols}, 64), b}, f32_atol, f32_rtol);
  check_cuda_parity("mul bias rows, a misaligned", [&](const auto& x) { return mul(view(x[0]), x[1]); }, {a, bias},
                    f32_atol, f32_rtol);
  check_cuda_parity("log, misaligned", [&](const auto& x) { return log(view(x[0])); }, {b}, f32_atol, f32_rtol);
  check_cuda_parity("mul scalar, misaligned", [&](const auto& x) { return view(x[0]) * 0.1; }, {a}, f32_atol,
                    f32_rtol);
}

TEST_CASE("cuda elementwise: the double kernels match the CPU") {
  check_binary({3, 64}, {64}, 31, DType::f64);
  check_binary({2, 1, 64}, {3, 1}, 33, DType::f64);
  check_unary({197}, 35, DType::f64);
}

TEST_CASE("cuda elementwise: a broadcast over more dimensions than the kernels take is an error") {
  const Tensor a = ones(Shape(17, 1), DType::f32, Device::cuda());
  Shape b_shape(17, 1);
  b_shape[0] = 2;
  const Tensor b = ones(b_shape, DType::f32, Device::cuda());
  CHECK_THROWS_WITH(add(a, b), doctest::Contains("add: broadcasting"));
}

TEST_CASE("cuda elementwise: the full grid of shapes" * doctest::test_suite("slow")) {
  for (int64_t rows : {1, 3, 197})
    for (int64_t cols : {1, 3, 64, 197, 768}) {
      CAPTURE(rows);
      CAPTURE(cols);
      check_binary({rows, cols}, {rows, cols}, 41);
      check_binary({rows, cols}, {cols}, 43);
      check_binary({rows, cols}, {rows, 1}, 45);
      check_binary({rows, 1}, {1, cols}, 47);
      check_binary({2, rows, cols}, {rows, 1}, 49);
      check_binary({rows, 1, cols}, {3, cols}, 51);
    }
  check_binary({1, 2304}, {2304}, 53);
  check_binary({197, 2304}, {197, 1}, 55);
  check_unary({197, 768}, 57);
}
