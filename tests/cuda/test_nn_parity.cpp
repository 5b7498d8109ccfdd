// CUDA parity of the neural-network ops (engine/ops/nn.h): every op forward and backward on
// rows that do not divide the block size, large logits for softmax, the l2 clamp branch,
// aliased inputs (layer_norm(x, w, w), weight_norm(x, x)) and the double instantiation.
//
// Tolerances: the CPU kernels accumulate in double, the CUDA kernels in the data type, so f32
// results differ by float rounding of row sums of up to 2304 terms (relative ~1e-6); 1e-5
// absolute and relative covers that. The layer_norm gradients subtract row means of the
// upstream gradient (cancellation) and get 3e-5. f64 cases use 1e-12.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/ops/loss.h"
#include "engine/ops/nn.h"
#include "engine/ops/shape.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

constexpr double f32_tol = 1e-5, layer_norm_tol = 3e-5, f64_tol = 1e-12;

// Every op of this file at one [rows, d] shape, f32.
void check_all_ops(int64_t rows, int64_t d) {
  const Shape shape{rows, d};
  const uint64_t seed = static_cast<uint64_t>(rows * 10007 + d);
  check_cuda_parity(shape_label("gelu", rows, d), [](auto& x) { return gelu(x[0]); }, {leaf(shape, seed, -4, 4)});
  check_cuda_parity(
      shape_label("layer_norm", rows, d), [](auto& x) { return layer_norm(x[0], x[1], x[2]); },
      {leaf(shape, seed + 1, -2, 3), leaf({d}, seed + 2, 0.5, 1.5), leaf({d}, seed + 3)}, layer_norm_tol,
      layer_norm_tol);
  check_cuda_parity(shape_label("softmax", rows, d), [](auto& x) { return softmax(x[0]); },
                    {leaf(shape, seed + 4, -50, 50)});
  check_cuda_parity(shape_label("log_softmax", rows, d), [](auto& x) { return log_softmax(x[0]); },
                    {leaf(shape, seed + 5, -50, 50)});
  check_cuda_parity(shape_label("l2_normalize", rows, d), [](auto& x) { return l2_normalize(x[0]); },
                    {leaf(shape, seed + 6)});
  check_cuda_parity(shape_label("weight_norm", rows, d), [](auto& x) { return weight_norm(x[0], x[1]); },
                    {leaf(shape, seed + 7), leaf({rows, 1}, seed + 8, 0.5, 2)});
}

}  // namespace

TEST_CASE("cuda nn: every op at rows and widths that do not divide the block size") {
  check_all_ops(3, 197);
  check_all_ops(197, 3);
  check_all_ops(1, 1);
}

// Rows up to 1024 go a warp per row, held in registers: 16-byte packs when d % 4 == 0 (64,
// 320, 768, 1024), element by element otherwise (333, 700, 1001), at each register budget (8,
// 16, 24, 32 elements per lane); 1030 takes the block-per-row kernels. 197 rows are more than
// one wave of the emulator's resident warps, so the warps loop over rows.
TEST_CASE("cuda nn: warp-per-row kernels at every register budget, packed and not") {
  for (int64_t d : {64, 320, 333, 700, 768, 1001, 1024, 1030}) check_all_ops(2, d);
  check_all_ops(197, 64);
}

// Rows of a view one element into its storage are not 16-byte aligned even when d % 4 == 0:
// the row kernels must take the element-by-element path (x is a slice of a flat leaf, so the
// gradient flows back through the view).
TEST_CASE("cuda nn: rows that start at an odd offset") {
  const int64_t rows = 3, d = 64;
  auto rows_view = [](const Tensor& flat) { return reshape(slice(flat, 0, 1, 1 + rows * d), {rows, d}); };
  const Tensor flat = leaf({1 + rows * d}, 30, -3, 3);
  check_cuda_parity("softmax, misaligned rows", [&](auto& x) { return softmax(rows_view(x[0])); }, {flat});
  check_cuda_parity("log_softmax, misaligned rows", [&](auto& x) { return log_softmax(rows_view(x[0])); }, {flat});
  check_cuda_parity("l2_normalize, misaligned rows", [&](auto& x) { return l2_normalize(rows_view(x[0])); }, {flat});
  check_cuda_parity("gelu, misaligned", [&](auto& x) { return gelu(rows_view(x[0])); }, {flat});
  check_cuda_parity(
      "layer_norm, misaligned rows", [&](auto& x) { return layer_norm(rows_view(x[0]), x[1], x[2]); },
      {flat, leaf({d}, 31, 0.5, 1.5), leaf({d}, 32)}, layer_norm_tol, layer_norm_tol);
  // cross_entropy's row kernels share this machinery.
  std::vector<int64_t> labels = {63, 0, 17};
  check_cuda_parity(
      "cross_entropy, misaligned logits", [&](auto& x) { return cross_entropy(rows_view(x[0]), x[1]); },
      {flat, from_vector(labels, {rows})});
}

TEST_CASE("cuda nn: layer_norm without affine, with gamma or beta only, and aliased parameters") {
  const Shape shape{3, 64};
  check_cuda_parity(
      "layer_norm no affine", [](auto& x) { return layer_norm(x[0], Tensor(), Tensor()); }, {leaf(shape, 1, -2, 3)},
      layer_norm_tol, layer_norm_tol);
  check_cuda_parity(
      "layer_norm gamma only", [](auto& x) { return layer_norm(x[0], x[1], Tensor()); },
      {leaf(shape, 2), leaf({64}, 3, 0.5, 1.5)}, layer_norm_tol, layer_norm_tol);
  check_cuda_parity(
      "layer_norm beta only, no dx", [](auto& x) { return layer_norm(x[0], Tensor(), x[1]); },
      {random_tensor(shape, 4, -1, 1, DType::f32), leaf({64}, 5)}, layer_norm_tol, layer_norm_tol);
  // One buffer receives dgamma (overwrite) and then dbeta (accumulate).
  check_cuda_parity(
      "layer_norm gamma is beta", [](auto& x) { return layer_norm(x[0], x[1], x[1]); },
      {leaf(shape, 6), leaf({64}, 7, 0.5, 1.5)}, layer_norm_tol, layer_norm_tol);
  // dx, dgamma and dbeta all land in one buffer.
  check_cuda_parity(
      "layer_norm x is gamma is beta", [](auto& x) { return layer_norm(x[0], x[0], x[0]); }, {leaf({197}, 8, 0.5, 1.5)},
      layer_norm_tol, layer_norm_tol);
  // More rows than one partial sum of the dgamma/dbeta column reduction, batched leading dims.
  check_cuda_parity(
      "layer_norm [2, 70, 64]", [](auto& x) { return layer_norm(x[0], x[1], x[2]); },
      {leaf({2, 70, 64}, 9, -2, 3), leaf({64}, 10, 0.5, 1.5), leaf({64}, 11)}, layer_norm_tol, layer_norm_tol);
}

TEST_CASE("cuda nn: l2_normalize below the clamp, weight_norm variants") {
  // Norms of rows of 64 values in ±0.01 stay below eps = 1: the clamped branch dx = g/eps.
  check_cuda_parity("l2_normalize clamped", [](auto& x) { return l2_normalize(x[0], 1.0); },
                    {leaf({3, 64}, 12, -0.01, 0.01)});
  check_cuda_parity("weight_norm g [out], conv-shaped v", [](auto& x) { return weight_norm(x[0], x[1]); },
                    {leaf({5, 3, 3, 7}, 13), leaf({5}, 14, -2, -0.5)});
  check_cuda_parity("weight_norm dg only", [](auto& x) { return weight_norm(x[0], x[1]); },
                    {random_tensor({3, 197}, 15, -1, 1, DType::f32), leaf({3, 1}, 16)});
  // v [out, 1] as its own g: dv (overwrite) and dg (accumulate) share one buffer.
  check_cuda_parity("weight_norm v is g", [](auto& x) { return weight_norm(x[0], x[0]); }, {leaf({3, 1}, 17, 0.5, 2)});
}

TEST_CASE("cuda nn: double instantiations") {
  const Shape shape{3, 197};
  check_cuda_parity(
      "gelu f64", [](auto& x) { return gelu(x[0]); }, {leaf(shape, 20, -4, 4, DType::f64)}, f64_tol, f64_tol);
  check_cuda_parity(
      "layer_norm f64", [](auto& x) { return layer_norm(x[0], x[1], x[2]); },
      {leaf(shape, 21, -2, 3, DType::f64), leaf({197}, 22, 0.5, 1.5, DType::f64), leaf({197}, 23, -1, 1, DType::f64)},
      f64_tol, f64_tol);
  check_cuda_parity(
      "softmax f64", [](auto& x) { return softmax(x[0]); }, {leaf(shape, 24, -50, 50, DType::f64)}, f64_tol, f64_tol);
  check_cuda_parity(
      "log_softmax f64", [](auto& x) { return log_softmax(x[0]); }, {leaf(shape, 25, -50, 50, DType::f64)}, f64_tol,
      f64_tol);
  check_cuda_parity(
      "l2_normalize f64", [](auto& x) { return l2_normalize(x[0]); }, {leaf(shape, 26, -1, 1, DType::f64)}, f64_tol,
      f64_tol);
  check_cuda_parity(
      "weight_norm f64", [](auto& x) { return weight_norm(x[0], x[1]); },
      {leaf(shape, 27, -1, 1, DType::f64), leaf({3, 1}, 28, 0.5, 2, DType::f64)}, f64_tol, f64_tol);
}

TEST_CASE("cuda nn: every op over the full grid of rows and widths" * doctest::test_suite("slow")) {
  for (int64_t rows : {1, 3, 197})
    for (int64_t d : {1, 3, 64, 197, 768}) check_all_ops(rows, d);
  check_all_ops(3, 2304);
}
