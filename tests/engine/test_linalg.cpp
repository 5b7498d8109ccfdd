#include <doctest/doctest.h>

#include "engine/ops.h"
#include "engine/ops/shape.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed) { return random_tensor(shape, seed).set_requires_grad(true); }

// `folded` and `separate` (functions of a vector of tensors) on fresh f32 leaves copied from
// `inputs`: the same output bits, and the same gradient bits for every input under `upstream`.
template <class Folded, class Separate>
void check_same_bits(const std::vector<Tensor>& inputs, const Tensor& upstream, Folded folded, Separate separate) {
  std::vector<Tensor> a, b;
  for (const Tensor& t : inputs) {
    a.push_back(t.to(DType::f32).clone().set_requires_grad(true));
    b.push_back(t.to(DType::f32).clone().set_requires_grad(true));
  }
  const Tensor out_a = folded(a), out_b = separate(b), g = upstream.to(DType::f32);
  CHECK(out_a.to_vector<float>() == out_b.to_vector<float>());
  sum(out_a * g).backward();
  sum(out_b * g).backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i].grad().to_vector<float>() == b[i].grad().to_vector<float>());
  }
}
}  // namespace

TEST_CASE("matmul: values of a small product") {
  Tensor a = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2});
  CHECK(matmul(a, b).to_vector<double>() == std::vector<double>{4, 5, 10, 11});
}

TEST_CASE("matmul: gradients, 2-D, batched and with a shared right matrix") {
  check_op("matmul 2d", [](auto& x) { return matmul(x[0], x[1]); }, {leaf({3, 4}, 1), leaf({4, 5}, 2)});
  check_op("matmul batched", [](auto& x) { return matmul(x[0], x[1]); }, {leaf({2, 3, 3, 4}, 3), leaf({2, 3, 4, 2}, 4)});
  check_op("matmul shared b", [](auto& x) { return matmul(x[0], x[1]); }, {leaf({3, 2, 4}, 5), leaf({4, 3}, 6)});
  check_op("matmul same input twice", [](auto& x) { return matmul(x[0], x[0]); }, {leaf({4, 4}, 7)});
}

TEST_CASE("matmul_transposed: a·bᵀ without the transpose, gradients in every batch form") {
  // The same values as matmul with b transposed first.
  Tensor a = random_tensor({2, 3, 5, 4}, 20), b = random_tensor({2, 3, 6, 4}, 21);
  CHECK(matmul_transposed(a, b).to_vector<double>() == matmul(a, transpose(b, -1, -2)).to_vector<double>());
  CHECK(matmul_transposed(a, b).shape() == Shape{2, 3, 5, 6});
  check_op("matmul_transposed 2d", [](auto& x) { return matmul_transposed(x[0], x[1]); },
           {leaf({3, 4}, 22), leaf({5, 4}, 23)});
  check_op("matmul_transposed batched", [](auto& x) { return matmul_transposed(x[0], x[1]); },
           {leaf({2, 3, 3, 4}, 24), leaf({2, 3, 2, 4}, 25)});
  check_op("matmul_transposed shared b", [](auto& x) { return matmul_transposed(x[0], x[1]); },
           {leaf({3, 2, 4}, 26), leaf({5, 4}, 27)});
  check_op("matmul_transposed same input twice (a Gram matrix)", [](auto& x) { return matmul_transposed(x[0], x[0]); },
           {leaf({4, 3}, 28)});
  CHECK_THROWS_WITH(matmul_transposed(zeros({2, 3}, DType::f64), zeros({3, 2}, DType::f64)),
                    doctest::Contains("matmul: inner dimensions differ: f64[2, 3] cpu · f64[3, 2] cpu (transposed)"));
}

TEST_CASE("matmul_transposed with a scale: in the product's alpha, forward and backward") {
  check_op("matmul_transposed scaled", [](auto& x) { return matmul_transposed(x[0], x[1], 0.3); },
           {leaf({2, 3, 4}, 40), leaf({2, 5, 4}, 41)});
  check_op("matmul_transposed scaled, shared b", [](auto& x) { return matmul_transposed(x[0], x[1], -1.7); },
           {leaf({3, 2, 4}, 42), leaf({5, 4}, 43)});
  // Attention's 1/√d for heads of 64 and 16 is a power of two: the bits of the product followed
  // by a multiplication (what Attention computed before the scale moved into the product), in the
  // values and in both gradients, in f32.
  for (const double scale : {0.125, 0.25}) {
    CAPTURE(scale);
    check_same_bits({random_tensor({2, 3, 7, 16}, 44), random_tensor({2, 3, 9, 16}, 45)},
                    random_tensor({2, 3, 7, 9}, 46), [&](auto& x) { return matmul_transposed(x[0], x[1], scale); },
                    [&](auto& x) { return matmul_transposed(x[0], x[1]) * scale; });
  }
}

TEST_CASE("linear: gradients with and without bias") {
  check_op("linear", [](auto& x) { return linear(x[0], x[1], x[2]); }, {leaf({2, 3, 5}, 8), leaf({4, 5}, 9), leaf({4}, 10)});
  check_op("linear no bias", [](auto& x) { return linear(x[0], x[1]); }, {leaf({6, 5}, 11), leaf({3, 5}, 12)});
  check_op("linear frozen weight", [](auto& x) { return linear(x[0], x[1], x[2]); },
           {leaf({6, 5}, 13), random_tensor({3, 5}, 14), random_tensor({3}, 15)});
}

TEST_CASE("linear with a residual: gradients, and on the CPU the bits of linear then +") {
  check_op("linear residual", [](auto& x) { return linear(x[0], x[1], x[2], x[3]); },
           {leaf({2, 3, 5}, 50), leaf({4, 5}, 51), leaf({4}, 52), leaf({2, 3, 4}, 53)});
  check_op("linear residual, no bias", [](auto& x) { return linear(x[0], x[1], Tensor(), x[2]); },
           {leaf({6, 5}, 54), leaf({3, 5}, 55), leaf({6, 3}, 56)});
  // The residual is also the input, as a block's skip connection reads x twice (through norm1 too).
  check_op("linear residual is the input", [](auto& x) { return linear(x[0], x[1], x[2], x[0]); },
           {leaf({3, 4}, 57), leaf({4, 4}, 58), leaf({4}, 59)});
  // f32, a transformer's widths, the residual also the input (a block's skip connection): forward
  // and every gradient equal the separate addition's bits.
  check_same_bits({random_tensor({2, 17, 64}, 60), random_tensor({64, 64}, 61), random_tensor({64}, 62)},
                  random_tensor({2, 17, 64}, 63), [](auto& x) { return linear(x[0], x[1], x[2], x[0]); },
                  [](auto& x) { return x[0] + linear(x[0], x[1], x[2]); });
  const Tensor x0 = zeros({2, 17, 64}, DType::f32), w0 = zeros({64, 64}, DType::f32), b0 = zeros({64}, DType::f32);
  CHECK_THROWS_WITH(linear(x0, w0, b0, zeros({2, 17, 63}, DType::f32)),
                    doctest::Contains("linear: residual f32[2, 17, 63] cpu does not match the output [2, 17, 64]"));
}

TEST_CASE("matmul and linear: shape, dtype and device errors name the op and shapes") {
  Tensor a = zeros({2, 3}, DType::f64), b = zeros({4, 2}, DType::f64);
  CHECK_THROWS_WITH(matmul(a, b), doctest::Contains("matmul: inner dimensions differ: f64[2, 3] cpu"));
  CHECK_THROWS_WITH(matmul(a, zeros({3, 2}, DType::f32)), doctest::Contains("matmul: dtype mismatch"));
  CHECK_THROWS_WITH(matmul(zeros({3}, DType::f64), a), doctest::Contains("at least 2 dimensions"));
  CHECK_THROWS_WITH(matmul(zeros({2, 2, 3}, DType::f64), zeros({3, 3, 2}, DType::f64)),
                    doctest::Contains("batch dimensions differ"));
  CHECK_THROWS_WITH(linear(a, zeros({4, 5}, DType::f64)), doctest::Contains("linear: input f64[2, 3] cpu"));
  CHECK_THROWS_WITH(linear(a, zeros({4, 3}, DType::f64), zeros({5}, DType::f64)), doctest::Contains("linear: bias"));
  CHECK_THROWS_WITH(matmul(zeros({2, 2}, DType::i64), zeros({2, 2}, DType::i64)),
                    doctest::Contains("matmul: expected an f32 or f64 tensor"));
}
