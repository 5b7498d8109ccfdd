// Exhaustive sweeps, run by `make test-slow` (doctest suite "slow") before an issue is
// resolved: every op over a grid of shapes (rows and widths of 1, 3, 7 and 17, covering
// single rows and non-power-of-two widths), and bitwise equality across thread counts.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstring>

#include "engine/ops.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

struct OpCase {
  const char* name;
  TensorFn f;
  int inputs;         // leading inputs that need gradients; all are [rows, width] unless shaped below
  bool weight_input;  // the second input is a [width] vector (gamma, bias) instead
};

Tensor targets_for(int64_t rows, int64_t classes) {
  std::vector<int64_t> t(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) t[static_cast<size_t>(r)] = (r * 5 + 1) % classes;
  return from_vector(t, {rows});
}

std::vector<OpCase> op_cases() {
  return {
      {"add", [](auto& x) { return x[0] + x[1]; }, 2, false},
      {"mul broadcast", [](auto& x) { return x[0] * x[1]; }, 2, true},
      {"div", [](auto& x) { return x[0] / (x[1] * x[1] + 1.0); }, 2, false},
      {"exp log", [](auto& x) { return log(exp(x[0]) + 2.0); }, 1, false},
      {"sum axis 0", [](auto& x) { return sum(x[0], 0); }, 1, false},
      {"mean axis 1", [](auto& x) { return mean(x[0], 1, true); }, 1, false},
      {"gelu", [](auto& x) { return gelu(x[0]); }, 1, false},
      {"layer_norm", [](auto& x) { return layer_norm(x[0] * 3.0, x[1], x[1] * 0.5, 1e-6); }, 2, true},
      {"softmax", [](auto& x) { return softmax(x[0] * 4.0); }, 1, false},
      {"log_softmax", [](auto& x) { return log_softmax(x[0] * 4.0); }, 1, false},
      {"l2_normalize", [](auto& x) { return l2_normalize(x[0] + 2.0); }, 1, false},
      {"transpose", [](auto& x) { return transpose(x[0], 0, 1); }, 1, false},
      {"matmul", [](auto& x) { return matmul(x[0], transpose(x[1], 0, 1)); }, 2, false},
      {"cross_entropy",
       [](auto& x) { return cross_entropy(x[0] * 3.0, targets_for(x[0].size(0), x[0].size(1))); }, 1, false},
      {"cross_entropy_soft", [](auto& x) { return cross_entropy_soft(x[0], softmax(x[1])); }, 2, false},
  };
}

std::vector<Tensor> inputs_for(const OpCase& op, int64_t rows, int64_t width, uint64_t seed) {
  std::vector<Tensor> in;
  for (int i = 0; i < op.inputs; ++i) {
    const Shape shape = (i == 1 && op.weight_input) ? Shape{width} : Shape{rows, width};
    in.push_back(random_tensor(shape, seed + static_cast<uint64_t>(i), 0.1, 1.0).set_requires_grad(true));
  }
  return in;
}

// Forward output and input gradients, as raw bytes, at a given OpenMP thread count.
std::vector<std::vector<char>> run_bytes(const OpCase& op, const std::vector<Tensor>& inputs, int threads) {
  omp_set_num_threads(threads);
  std::vector<Tensor> xs;
  for (const Tensor& t : inputs) xs.push_back(t.to(DType::f32).clone().set_requires_grad(true));
  Tensor out = op.f(xs);
  run_backward(out, ones(out.shape(), DType::f32), false);
  std::vector<std::vector<char>> bytes;
  auto keep = [&](const Tensor& t) {
    const char* p = static_cast<const char*>(t.raw_data());
    bytes.emplace_back(p, p + t.nbytes());
  };
  keep(out);
  for (const Tensor& x : xs) keep(x.grad());
  return bytes;
}

}  // namespace

TEST_CASE("sweep: every op's gradients over a grid of shapes" * doctest::test_suite("slow")) {
  for (const OpCase& op : op_cases())
    for (int64_t rows : {1, 3, 7})
      for (int64_t width : {1, 3, 17}) {
        if (std::string(op.name) == "matmul" && width > 7) continue;  // keeps the sweep to minutes
        CAPTURE(rows);
        CAPTURE(width);
        check_op(op.name, op.f, inputs_for(op, rows, width, static_cast<uint64_t>(rows * 100 + width)));
      }
}

TEST_CASE("sweep: patch convolution over patch sizes and channel counts" * doctest::test_suite("slow")) {
  for (int64_t patch : {1, 2, 3})
    for (int64_t channels : {1, 3}) {
      CAPTURE(patch);
      CAPTURE(channels);
      check_op("conv2d_patch", [](auto& x) { return conv2d_patch(x[0], x[1], x[2]); },
               {random_tensor({2, channels, 2 * patch, 3 * patch}, 1).set_requires_grad(true),
                random_tensor({4, channels, patch, patch}, 2).set_requires_grad(true),
                random_tensor({4}, 3).set_requires_grad(true)});
    }
}

// The engine's own kernels give the same bits for any thread count; OpenBLAS's GEMM
// partitions its work by thread count, so a matrix product is reproducible for a given
// thread count only (checked by running it twice).
TEST_CASE("sweep: forward and backward are bitwise equal for 1 to 4 threads" * doctest::test_suite("slow")) {
  const int saved = omp_get_max_threads();
  for (const OpCase& op : op_cases()) {
    const std::string name = op.name;
    CAPTURE(name);
    const auto inputs = inputs_for(op, 2048, 97, 7);
    const auto reference = run_bytes(op, inputs, 1);
    for (int threads = 2; threads <= 4; ++threads) {
      if (name == "matmul") {
        CHECK(run_bytes(op, inputs, threads) == run_bytes(op, inputs, threads));
      } else {
        CHECK(run_bytes(op, inputs, threads) == reference);
      }
    }
  }
  omp_set_num_threads(saved);
}
