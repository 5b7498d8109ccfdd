// CUDA parity of the losses (engine/ops/loss.h): value and gradients on rows and classes that do
// not divide the block size, logits of ±50, i64 and i32 targets, aliased inputs, the
// out-of-range target error (same message as on the CPU) and the double instantiation.
//
// Tolerances: the CPU kernels accumulate in double, the CUDA kernels in the data type; the f32
// losses are means of up to 151k float terms summed in a tree (relative error ~1e-6), so 1e-5
// absolute and relative. f64 cases use 1e-12.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/ops/loss.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// Class indices spread over [0, classes), the first and the last class included.
Tensor class_targets(int64_t rows, int64_t classes, DType dtype = DType::i64) {
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) labels[static_cast<size_t>(r)] = r == 0 ? classes - 1 : (r * 7) % classes;
  return from_vector(labels, {rows}).to(dtype);
}

constexpr double f32_tol = 1e-5, f64_tol = 1e-12;

void check_all_losses(int64_t rows, int64_t classes) {
  const Shape shape{rows, classes};
  const uint64_t seed = static_cast<uint64_t>(rows * 10007 + classes);
  check_cuda_parity(
      shape_label("cross_entropy", rows, classes), [](auto& x) { return cross_entropy(x[0], x[1]); },
      {leaf(shape, seed, -50, 50), class_targets(rows, classes)}, f32_tol, f32_tol);
  check_cuda_parity(
      shape_label("cross_entropy_soft", rows, classes), [](auto& x) { return cross_entropy_soft(x[0], x[1]); },
      {leaf(shape, seed + 1, -50, 50), leaf(shape, seed + 2, 0, 1)}, f32_tol, f32_tol);
  check_cuda_parity(
      shape_label("mse_loss", rows, classes), [](auto& x) { return mse_loss(x[0], x[1]); },
      {leaf(shape, seed + 3), leaf(shape, seed + 4)}, f32_tol, f32_tol);
}

// The message a call throws (empty when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cuda loss: every loss at rows and classes that do not divide the block size") {
  check_all_losses(3, 197);
  check_all_losses(197, 3);
  check_all_losses(1, 1);
}

TEST_CASE("cuda loss: i32 targets, gradients wanted for one input only, aliased inputs") {
  check_cuda_parity(
      "cross_entropy i32", [](auto& x) { return cross_entropy(x[0], x[1]); },
      {leaf({3, 64}, 1, -3, 3), class_targets(3, 64, DType::i32)}, f32_tol, f32_tol);
  check_cuda_parity(
      "cross_entropy_soft dprobs only", [](auto& x) { return cross_entropy_soft(x[0], x[1]); },
      {random_tensor({3, 64}, 2, -3, 3, DType::f32), leaf({3, 64}, 3, 0, 1)}, f32_tol, f32_tol);
  check_cuda_parity(
      "mse_loss da only", [](auto& x) { return mse_loss(x[0], x[1]); },
      {leaf({3, 64}, 4), random_tensor({3, 64}, 5, -1, 1, DType::f32)}, f32_tol, f32_tol);
  // One buffer receives dlogits (overwrite) then dprobs (accumulate); da then db for mse.
  check_cuda_parity(
      "cross_entropy_soft(x, x)", [](auto& x) { return cross_entropy_soft(x[0], x[0]); }, {leaf({3, 197}, 6, 0, 1)},
      f32_tol, f32_tol);
  check_cuda_parity(
      "mse_loss(x, x)", [](auto& x) { return mse_loss(x[0], x[0]); }, {leaf({3, 197}, 7)}, f32_tol, f32_tol);
}

TEST_CASE("cuda loss: mse over many elements sums several partials in order") {
  check_cuda_parity(
      "mse_loss [197, 768]", [](auto& x) { return mse_loss(x[0], x[1]); }, {leaf({197, 768}, 8), leaf({197, 768}, 9)},
      f32_tol, f32_tol);
}

TEST_CASE("cuda loss: an out-of-range target throws the CPU's message before any kernel runs") {
  for (DType index : {DType::i64, DType::i32}) {
    CAPTURE(dtype_name(index));
    const Tensor logits = random_tensor({3, 5}, 10, -1, 1, DType::f32);
    for (const std::vector<int64_t>& labels : {std::vector<int64_t>{0, 5, 1}, std::vector<int64_t>{0, 4, -1}}) {
      const Tensor targets = from_vector(labels, {3}).to(index);
      const std::string cpu_error = error_of([&] { cross_entropy(logits, targets); });
      CHECK(cpu_error.find("cross_entropy: target ") == 0);
      CHECK(error_of([&] { cross_entropy(logits.to(Device::cuda()), targets.to(Device::cuda())); }) == cpu_error);
    }
  }
  CHECK_THROWS_WITH(cross_entropy(random_tensor({2, 3}, 11, -1, 1, DType::f32).to(Device::cuda()),
                                  from_vector<int64_t>({0, 3}, {2}).to(Device::cuda())),
                    doctest::Contains("cross_entropy: target 3 at position 1 is out of range for 3 classes [0, 3)"));
}

TEST_CASE("cuda loss: double instantiations") {
  const Shape shape{3, 197};
  check_cuda_parity(
      "cross_entropy f64", [](auto& x) { return cross_entropy(x[0], x[1]); },
      {leaf(shape, 20, -50, 50, DType::f64), class_targets(3, 197, DType::i32)}, f64_tol, f64_tol);
  check_cuda_parity(
      "cross_entropy_soft f64", [](auto& x) { return cross_entropy_soft(x[0], x[1]); },
      {leaf(shape, 21, -50, 50, DType::f64), leaf(shape, 22, 0, 1, DType::f64)}, f64_tol, f64_tol);
  check_cuda_parity(
      "mse_loss f64", [](auto& x) { return mse_loss(x[0], x[1]); },
      {leaf(shape, 23, -1, 1, DType::f64), leaf(shape, 24, -1, 1, DType::f64)}, f64_tol, f64_tol);
}

TEST_CASE("cuda loss: every loss over the full grid of rows and classes" * doctest::test_suite("slow")) {
  for (int64_t rows : {1, 3, 197})
    for (int64_t classes : {1, 3, 64, 197, 768}) check_all_losses(rows, classes);
  check_all_losses(3, 2304);
}
