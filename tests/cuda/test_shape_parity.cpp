// CUDA parity of the shape ops (reshape, permute/transpose, slice, concat), forward and backward.
// They move data without arithmetic, so every comparison is exact (atol = rtol = 0): the
// gradients too, since each gradient element is one copied value (or a copied value added to
// one existing value in accumulate mode, the same single addition on both devices).
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/ops/shape.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

void check_permute(const Shape& shape, const std::vector<int64_t>& dims, uint64_t seed) {
  CAPTURE(shape_str(shape));
  CAPTURE(shape_str(dims));
  check_cuda_parity("permute", [&](auto& t) { return permute(t[0], dims); }, {leaf(shape, seed)}, 0, 0);
}

}  // namespace

TEST_CASE("cuda parity: permute and transpose") {
  const Shape heads{2, 3, 197, 64};
  check_permute(heads, {0, 2, 1, 3}, 1);  // last axis stays: the gather kernel
  check_permute(heads, {0, 1, 3, 2}, 2);  // last two swap: the tiled kernel
  check_permute(heads, {3, 1, 0, 2}, 3);  // tiled, with the src-contiguous axis first in dst
  check_permute({197, 3}, {1, 0}, 4);     // narrow src rows: the gather kernel with a moving last axis
  check_permute({1, 197, 1, 64}, {2, 3, 0, 1}, 5);  // size-1 axes dropped: a 2-D transpose
  check_permute({}, {}, 6);                          // a scalar
  check_cuda_parity("transpose", [](auto& t) { return transpose(t[0], 0, -1); }, {leaf({3, 197}, 7)}, 0, 0);
  // Two uses of x: the second gradient accumulates into the first.
  check_cuda_parity(
      "permute accumulate", [](auto& t) { return concat({transpose(t[0], 0, 1), permute(t[0], {1, 0})}, 0); },
      {leaf({3, 197}, 8)}, 0, 0);
  check_cuda_parity("permute f64", [](auto& t) { return permute(t[0], {2, 0, 1}); },
                    {leaf({3, 197, 64}, 9, DType::f64)}, 0, 0);
}

TEST_CASE("cuda parity: reshape views and their gradients on the device") {
  check_cuda_parity("reshape", [](auto& t) { return reshape(t[0], {6, -1}); }, {leaf({2, 3, 197, 64}, 10)}, 0, 0);
  // A view at a non-zero storage offset (slice along axis 0), reshaped, then permuted.
  check_cuda_parity(
      "reshape of a slice",
      [](auto& t) { return transpose(reshape(slice(t[0], 0, 1, 3), {-1, 64}), 0, 1); }, {leaf({3, 197, 64}, 11)}, 0, 0);
}

TEST_CASE("cuda parity: slice") {
  const Tensor x = leaf({3, 197, 64}, 12);
  check_cuda_parity("slice axis 1", [](auto& t) { return slice(t[0], 1, 5, 100); }, {x}, 0, 0);
  check_cuda_parity("slice last axis", [](auto& t) { return slice(t[0], -1, 3, 64); }, {x}, 0, 0);
  check_cuda_parity("slice one column", [](auto& t) { return slice(t[0], 1, 196, 197); }, {x}, 0, 0);
  check_cuda_parity("slice axis 0 (a view)", [](auto& t) { return slice(t[0], 0, 1, 3); }, {x}, 0, 0);
  check_cuda_parity("slice empty", [](auto& t) { return slice(t[0], 1, 7, 7); }, {x}, 0, 0);
  check_cuda_parity("slice wide rows", [](auto& t) { return slice(t[0], 1, 1, 768); }, {leaf({3, 768}, 13)}, 0, 0);
  // Overlapping slices of one input: accumulate mode adds into the sliced region only.
  check_cuda_parity(
      "slice accumulate", [](auto& t) { return concat({slice(t[0], 1, 0, 5), slice(t[0], 1, 3, 90)}, 1); }, {x}, 0, 0);
  check_cuda_parity("slice f64", [](auto& t) { return slice(t[0], 1, 3, 197); }, {leaf({3, 197}, 14, DType::f64)}, 0,
                    0);
}

TEST_CASE("cuda parity: concat") {
  const auto three = [](int64_t axis) {
    return [axis](const std::vector<Tensor>& t) { return concat({t[0], t[1], t[2]}, axis); };
  };
  check_cuda_parity("concat axis 1", three(1), {leaf({3, 5, 64}, 15), leaf({3, 64, 64}, 16), leaf({3, 1, 64}, 17)}, 0,
                    0);
  check_cuda_parity("concat axis 0", three(0), {leaf({1, 197}, 18), leaf({3, 197}, 19), leaf({2, 197}, 20)}, 0, 0);
  // The middle piece needs no gradient.
  check_cuda_parity("concat last axis", three(-1),
                    {leaf({197, 3}, 21), random_tensor({197, 64}, 22, -1, 1, DType::f32), leaf({197, 1}, 23)}, 0, 0);
  check_cuda_parity("concat f64", three(1),
                    {leaf({3, 5}, 24, DType::f64), leaf({3, 64}, 25, DType::f64), leaf({3, 1}, 26, DType::f64)}, 0, 0);
}

TEST_CASE("cuda parity: shape ops move every dtype bit for bit") {
  for (DType dtype : all_dtypes) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = values_of(dtype, {2, 3, 19, 40}, 27);
    check_cuda_forward_parity("permute gather", [](auto& t) { return permute(t[0], {0, 2, 1, 3}); }, {x});
    check_cuda_forward_parity("permute tiled", [](auto& t) { return permute(t[0], {3, 0, 2, 1}); }, {x});
    check_cuda_forward_parity("reshape", [](auto& t) { return reshape(t[0], {-1, 40}); }, {x});
    check_cuda_forward_parity("slice", [](auto& t) { return slice(t[0], 2, 3, 18); }, {x});
    check_cuda_forward_parity(
        "concat", [](auto& t) { return concat({t[0], t[1], t[2]}, 2); },
        {x, values_of(dtype, {2, 3, 1, 40}, 28), values_of(dtype, {2, 3, 5, 40}, 29)});
  }
}

TEST_CASE("cuda parity: every permutation, slice and concat geometry" * doctest::test_suite("slow")) {
  std::vector<int64_t> dims{0, 1, 2, 3};
  uint64_t seed = 100;
  do {
    check_permute({2, 3, 197, 64}, dims, ++seed);
    check_permute({3, 1, 33, 17}, dims, ++seed);
  } while (std::next_permutation(dims.begin(), dims.end()));
  check_permute({197, 2304}, {1, 0}, ++seed);
  for (int64_t rows : {1, 3, 197})
    for (int64_t cols : {1, 3, 64, 197, 768, 2304}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const Tensor x = leaf({rows, cols}, ++seed);
      check_cuda_parity("transpose", [](auto& t) { return transpose(t[0], 0, 1); }, {x}, 0, 0);
      check_cuda_parity("slice", [cols](auto& t) { return slice(t[0], 1, cols / 3, cols - cols / 4); }, {x}, 0, 0);
      check_cuda_parity(
          "concat", [](auto& t) { return concat({t[0], t[1], t[0]}, 1); }, {x, leaf({rows, 5}, ++seed)}, 0, 0);
    }
}
