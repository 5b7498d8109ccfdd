#include <doctest/doctest.h>

#include "engine/ops/indexing.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed) { return random_tensor(shape, seed).set_requires_grad(true); }
Tensor mask_of(const std::vector<uint8_t>& values, const Shape& shape) { return from_vector(values, shape); }
}  // namespace

TEST_CASE("index_select: rows by i64 and i32 indices, repeats allowed, every dtype") {
  Tensor x = from_vector<double>({0, 1, 10, 11, 20, 21}, {3, 2});
  Tensor y = index_select(x, from_vector<int64_t>({2, 0, 2}, {3}));
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.to_vector<double>() == std::vector<double>{20, 21, 0, 1, 20, 21});
  CHECK(index_select(x, from_vector<int32_t>({1}, {1})).to_vector<double>() == std::vector<double>{10, 11});
  CHECK(index_select(x, from_vector<int64_t>({}, {0})).shape() == Shape{0, 2});
  CHECK(index_select(from_vector<uint8_t>({5, 6, 7}, {3}), from_vector<int32_t>({2, 2, 0}, {3})).to_vector<int64_t>() ==
        std::vector<int64_t>{7, 7, 5});
  CHECK(index_select(x.to(DType::bf16), from_vector<int64_t>({1}, {1})).to_vector<float>() ==
        std::vector<float>{10, 11});
}

TEST_CASE("index_select: repeated indices accumulate their gradients") {
  Tensor x = zeros({4, 2}, DType::f64).set_requires_grad(true);
  Tensor idx = from_vector<int64_t>({3, 1, 3, 3}, {4});
  run_backward(index_select(x, idx), from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}), false);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 3, 4, 0, 0, 13, 16});
  run_backward(index_select(x, idx), ones({4, 2}, DType::f64), false);  // adds into the existing .grad
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 4, 5, 0, 0, 16, 19});
}

TEST_CASE("index_select: gradients") {
  const Tensor repeated = from_vector<int64_t>({4, 0, 4, 2, 4}, {5});
  check_op("index_select", [&](auto& t) { return index_select(t[0], repeated); }, {leaf({5, 3, 2}, 1)});
  const Tensor i32 = from_vector<int32_t>({1, 1, 0}, {3});
  check_op("index_select i32", [&](auto& t) { return index_select(t[0], i32); }, {leaf({3}, 2)});
}

TEST_CASE("index_select on a HostIndex: the values and gradients of the index tensor, checked on the host") {
  const std::vector<int64_t> rows = {4, 0, 4, 2, 4};
  check_op("index_select HostIndex", [&](auto& t) { return index_select(t[0], HostIndex(rows, t[0].device())); },
           {leaf({5, 3, 2}, 1)});
  Tensor a = zeros({5, 2}, DType::f64).set_requires_grad(true), b = zeros({5, 2}, DType::f64).set_requires_grad(true);
  const Tensor grad = from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2});
  run_backward(index_select(a, HostIndex(rows, Device::cpu())), grad, false);
  run_backward(index_select(b, from_vector(rows, {5})), grad, false);
  CHECK(a.grad().to_vector<double>() == std::vector<double>{3, 4, 0, 0, 7, 8, 0, 0, 15, 18});
  CHECK(a.grad().to_vector<double>() == b.grad().to_vector<double>());
  CHECK(HostIndex(rows, Device::cpu()).tensor().to_vector<int64_t>() == rows);
  CHECK_THROWS_WITH(index_select(zeros({3, 2}, DType::f64), HostIndex({0, 3}, Device::cpu())),
                    doctest::Contains("index_select: index 3 at position 1 is out of range for 3 rows of f64[3, 2]"));
  CHECK(index_select(zeros({3, 2}), HostIndex({}, Device::cpu())).shape() == Shape{0, 2});
}

TEST_CASE("index_select: errors name the index, its position and N") {
  Tensor x = zeros({3, 2}, DType::f64);
  CHECK_THROWS_WITH(
      index_select(x, from_vector<int64_t>({0, 2, 3}, {3})),
      doctest::Contains("index_select: index 3 at position 2 is out of range for 3 rows of f64[3, 2] cpu"));
  CHECK_THROWS_WITH(index_select(x, from_vector<int32_t>({-1}, {1})),
                    doctest::Contains("index_select: index -1 at position 0 is out of range for 3 rows"));
  CHECK_THROWS_WITH(index_select(x, from_vector<float>({0}, {1})),
                    doctest::Contains("index_select: indices must be i64 or i32, got f32[1] cpu"));
  CHECK_THROWS_WITH(index_select(x, zeros({1, 1}, DType::i64)),
                    doctest::Contains("index_select: indices must be 1-D, got i64[1, 1] cpu"));
  CHECK_THROWS_WITH(index_select(scalar_tensor(1), zeros({1}, DType::i64)),
                    doctest::Contains("index_select: x must have at least one dimension, got f32[] cpu"));
  CHECK_THROWS_WITH(index_select(x, Tensor()), doctest::Contains("index_select: indices is an undefined tensor"));
}

TEST_CASE("masked_select and masked_select_rows: values in row-major order") {
  Tensor x = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor picked = masked_select(x, mask_of({1, 0, 1, 0, 1, 1}, {2, 3}));
  CHECK(picked.shape() == Shape{4});
  CHECK(picked.to_vector<double>() == std::vector<double>{1, 3, 5, 6});
  CHECK(masked_select(x, zeros({2, 3}, DType::u8)).shape() == Shape{0});
  CHECK(masked_select(from_vector<int32_t>({7, 8}, {2}), mask_of({0, 1}, {2})).to_vector<int32_t>() ==
        std::vector<int32_t>{8});
  Tensor rows = masked_select_rows(from_vector<double>({0, 1, 10, 11, 20, 21}, {3, 1, 2}), mask_of({1, 0, 1}, {3}));
  CHECK(rows.shape() == Shape{2, 1, 2});
  CHECK(rows.to_vector<double>() == std::vector<double>{0, 1, 20, 21});
  CHECK(masked_select_rows(x.to(DType::bf16), mask_of({0, 1}, {2})).to_vector<float>() == std::vector<float>{4, 5, 6});
}

TEST_CASE("masked_select and masked_select_rows: gradients scatter back") {
  const Tensor mask = mask_of({1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0}, {3, 4});
  check_op("masked_select", [&](auto& t) { return masked_select(t[0], mask); }, {leaf({3, 4}, 3)});
  const Tensor row_mask = mask_of({0, 1, 1, 0}, {4});
  check_op("masked_select_rows", [&](auto& t) { return masked_select_rows(t[0], row_mask); }, {leaf({4, 2, 3}, 4)});

  Tensor x = zeros({3}, DType::f64).set_requires_grad(true);
  run_backward(masked_select(x, mask_of({1, 0, 1}, {3})), from_vector<double>({2, 3}, {2}), false);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{2, 0, 3});
}

TEST_CASE("masked_select and masked_select_rows: errors") {
  Tensor x = zeros({2, 3}, DType::f64);
  CHECK_THROWS_WITH(masked_select(x, mask_of({0, 1, 2, 1, 0, 0}, {2, 3})),
                    doctest::Contains("masked_select: mask value 2 at position 2 is not 0 or 1 (mask u8[2, 3] cpu)"));
  CHECK_THROWS_WITH(masked_select(x, zeros({3, 2}, DType::u8)),
                    doctest::Contains("masked_select: mask u8[3, 2] cpu does not match x f64[2, 3] cpu"));
  CHECK_THROWS_WITH(masked_select(x, zeros({2, 3}, DType::i64)),
                    doctest::Contains("masked_select: mask must be u8, got i64"));
  CHECK_THROWS_WITH(masked_select(x, Tensor()), doctest::Contains("masked_select: mask is an undefined tensor"));
  CHECK_THROWS_WITH(masked_select_rows(x, zeros({3}, DType::u8)),
                    doctest::Contains("masked_select_rows: mask u8[3] cpu must be [N] for x f64[2, 3] cpu [N, ...]"));
  CHECK_THROWS_WITH(masked_select_rows(x, zeros({2, 3}, DType::u8)), doctest::Contains("must be [N]"));
  CHECK_THROWS_WITH(masked_select_rows(scalar_tensor(1), zeros({1}, DType::u8)), doctest::Contains("must be [N]"));
  CHECK_THROWS_WITH(masked_select_rows(x, mask_of({1, 255}, {2})),
                    doctest::Contains("masked_select_rows: mask value 255 at position 1 is not 0 or 1"));
  CHECK_THROWS_WITH(masked_select_rows(x, zeros({2}, DType::f32)),
                    doctest::Contains("masked_select_rows: mask must be u8"));
}
