#include <doctest/doctest.h>

#include <algorithm>

#include "engine/ops/shape.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {
Tensor leaf(const Shape& shape, uint64_t seed) { return random_tensor(shape, seed).set_requires_grad(true); }
Tensor arange_as(const Shape& shape, DType dtype = DType::f64) {
  return reshape(arange(shape_numel(shape), dtype), shape);
}
}  // namespace

TEST_CASE("reshape: a view with -1 inferred") {
  Tensor x = arange(6, DType::f64);
  Tensor y = reshape(x, {3, -1});
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.storage() == x.storage());
  CHECK(y.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(reshape(x, {-1}).shape() == Shape{6});
  CHECK(reshape(scalar_tensor(3), {1, 1}).shape() == Shape{1, 1});
  CHECK(reshape(zeros({0, 3}), {3, 0}).shape() == Shape{3, 0});
  Tensor tail = slice(x, 0, 2, 6);  // a view at an offset stays at that offset
  CHECK(reshape(tail, {2, 2}).storage_offset() == 2);
  CHECK(reshape(tail, {2, 2}).to_vector<int64_t>() == std::vector<int64_t>{2, 3, 4, 5});
}

TEST_CASE("reshape: gradients") {
  check_op("reshape", [](auto& t) { return reshape(t[0], {4, -1}); }, {leaf({2, 3, 4}, 1)});
  check_op("reshape of a slice view", [](auto& t) { return reshape(slice(t[0], 0, 1, 3), {-1}); }, {leaf({4, 3}, 2)});
}

TEST_CASE("reshape: errors") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH(reshape(x, {4, -1}),
                    doctest::Contains("reshape: cannot reshape f32[2, 3] cpu (6 elements) into [4, -1]"));
  CHECK_THROWS_WITH(reshape(x, {5}), doctest::Contains("reshape: cannot reshape f32[2, 3] cpu"));
  CHECK_THROWS_WITH(reshape(x, {-1, -1}), doctest::Contains("reshape: at most one dimension may be -1, got [-1, -1]"));
  CHECK_THROWS_WITH(reshape(x, {-2, -3}), doctest::Contains("reshape: invalid dimension -2 in [-2, -3]"));
  CHECK_THROWS_WITH(reshape(zeros({0, 2}), {0, -1}), doctest::Contains("reshape: cannot infer the -1 in [0, -1]"));
  CHECK_THROWS_WITH(reshape(Tensor(), {1}), doctest::Contains("reshape: input is an undefined tensor"));
}

TEST_CASE("permute and transpose: values of a known arange, every dtype") {
  Tensor x = arange_as({2, 3, 4});
  Tensor y = permute(x, {2, 0, 1});
  CHECK(y.shape() == Shape{4, 2, 3});
  CHECK(y.to_vector<int64_t>() ==
        std::vector<int64_t>{0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23});
  CHECK(permute(x, {-1, 0, -2}).to_vector<int64_t>() == y.to_vector<int64_t>());
  CHECK(y.storage() != x.storage());
  CHECK(permute(x, {0, 1, 2}).to_vector<int64_t>() == x.to_vector<int64_t>());
  CHECK(permute(scalar_tensor(7), {}).item() == 7);
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::u8}) {
    Tensor t = transpose(arange_as({2, 3}, dtype), 0, 1);
    CHECK(t.dtype() == dtype);
    CHECK(t.shape() == Shape{3, 2});
    CHECK(t.to_vector<int64_t>() == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
  }
  CHECK(transpose(x, -1, 0).to_vector<int64_t>() == permute(x, {2, 1, 0}).to_vector<int64_t>());
}

TEST_CASE("permute: every axis order of shapes with size-1 axes and mergeable runs, against index arithmetic") {
  // The kernel drops size-1 axes and merges axes that stay neighbours; the reference indexes
  // every element on its own.
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{1, 3, 1, 4}, Shape{2, 1, 3, 2}, Shape{3, 2, 1, 1},
                             Shape{1, 1, 1, 1}, Shape{4, 7, 1, 3}}) {
    std::vector<int64_t> perm{0, 1, 2, 3};
    do {
      CAPTURE(shape);
      CAPTURE(perm);
      const Tensor x = arange_as(shape);
      const std::vector<int64_t> got = permute(x, perm).to_vector<int64_t>();
      Shape out_shape(4);
      for (size_t d = 0; d < 4; ++d) out_shape[d] = shape[static_cast<size_t>(perm[d])];
      std::vector<int64_t> expected;
      std::vector<int64_t> at(4);  // the dst index, row-major
      for (at[0] = 0; at[0] < out_shape[0]; ++at[0])
        for (at[1] = 0; at[1] < out_shape[1]; ++at[1])
          for (at[2] = 0; at[2] < out_shape[2]; ++at[2])
            for (at[3] = 0; at[3] < out_shape[3]; ++at[3]) {
              std::vector<int64_t> src(4);
              for (size_t d = 0; d < 4; ++d) src[static_cast<size_t>(perm[d])] = at[d];
              expected.push_back(((src[0] * shape[1] + src[1]) * shape[2] + src[2]) * shape[3] + src[3]);
            }
      CHECK(got == expected);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  CHECK(permute(zeros({2, 0, 3}), {2, 0, 1}).shape() == Shape{3, 2, 0});  // nothing to move
}

TEST_CASE("permute and transpose: gradients") {
  check_op("permute", [](auto& t) { return permute(t[0], {2, 0, 3, 1}); }, {leaf({2, 3, 4, 5}, 3)});
  check_op("transpose", [](auto& t) { return transpose(t[0], 1, -1); }, {leaf({3, 4, 2}, 4)});
  check_op("permute twice", [](auto& t) { return permute(transpose(t[0], 0, 1), {1, 0}); }, {leaf({3, 5}, 5)});
}

TEST_CASE("permute and transpose: errors") {
  Tensor x = zeros({2, 3, 4});
  CHECK_THROWS_WITH(permute(x, {0, 1}),
                    doctest::Contains("permute: dims [0, 1] do not match the rank of f32[2, 3, 4] cpu"));
  CHECK_THROWS_WITH(permute(x, {0, 1, 1}),
                    doctest::Contains("permute: dims [0, 1, 1] name axis 1 twice; not a permutation of the axes of "
                                      "f32[2, 3, 4] cpu"));
  CHECK_THROWS_WITH(permute(x, {0, 1, -2}), doctest::Contains("name axis 1 twice"));
  CHECK_THROWS_WITH(permute(x, {0, 1, 3}), doctest::Contains("permute: axis 3 is out of range for a tensor of rank 3"));
  CHECK_THROWS_WITH(transpose(x, 0, -4), doctest::Contains("transpose: axis -4 is out of range"));
  CHECK_THROWS_WITH(transpose(Tensor(), 0, 1), doctest::Contains("transpose: input is an undefined tensor"));
}

TEST_CASE("slice: a view along axis 0, a copy along other axes") {
  Tensor x = arange_as({3, 4});
  Tensor rows = slice(x, 0, 1, 3);
  CHECK(rows.shape() == Shape{2, 4});
  CHECK(rows.storage() == x.storage());
  CHECK(rows.storage_offset() == 4);
  CHECK(rows.to_vector<int64_t>() == std::vector<int64_t>{4, 5, 6, 7, 8, 9, 10, 11});
  Tensor cols = slice(x, -1, 1, 3);
  CHECK(cols.storage() != x.storage());
  CHECK(cols.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 5, 6, 9, 10});
  CHECK(slice(x, 1, 2, 2).shape() == Shape{3, 0});
  CHECK(slice(x, 0, 0, 3).to_vector<int64_t>() == x.to_vector<int64_t>());
  CHECK(slice(arange_as({2, 3}, DType::u8), 1, 2, 3).to_vector<int64_t>() == std::vector<int64_t>{2, 5});
  CHECK(slice(arange_as({2, 3}, DType::bf16), 1, 0, 1).to_vector<float>() == std::vector<float>{0, 3});
}

TEST_CASE("slice: gradients along every axis") {
  check_op("slice axis 0", [](auto& t) { return slice(t[0], 0, 1, 3); }, {leaf({4, 3, 2}, 6)});
  check_op("slice axis 1", [](auto& t) { return slice(t[0], 1, 0, 2); }, {leaf({2, 3, 4}, 7)});
  check_op("slice last axis", [](auto& t) { return slice(t[0], -1, 1, 4); }, {leaf({2, 3, 5}, 8)});
}

TEST_CASE("slice: backward zero-fills in overwrite mode and touches only the region in accumulate mode") {
  Tensor x = zeros({2, 4}, DType::f64).set_requires_grad(true);
  run_backward(slice(x, 1, 1, 3), ones({2, 2}, DType::f64), false);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 1, 0, 0, 1, 1, 0});
  x.set_grad(full({2, 4}, 5.0, DType::f64));
  run_backward(slice(x, 1, 1, 3), ones({2, 2}, DType::f64), false);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{5, 6, 6, 5, 5, 6, 6, 5});
  run_backward(slice(x, 0, 1, 2), full({1, 4}, 2.0, DType::f64), false);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{5, 6, 6, 5, 7, 8, 8, 7});
}

TEST_CASE("slice: out-of-bounds ranges and axes throw naming the shape") {
  Tensor x = zeros({3, 4}, DType::f64);
  CHECK_THROWS_WITH(slice(x, 1, 2, 5),
                    doctest::Contains("slice: range [2, 5) is out of bounds for axis 1 of size 4 in f64[3, 4] cpu"));
  CHECK_THROWS_WITH(slice(x, 0, -1, 2), doctest::Contains("slice: range [-1, 2) is out of bounds"));
  CHECK_THROWS_WITH(slice(x, 0, 2, 1), doctest::Contains("slice: range [2, 1) is out of bounds"));
  CHECK_THROWS_WITH(slice(x, 2, 0, 1), doctest::Contains("slice: axis 2 is out of range for a tensor of rank 2"));
  CHECK_THROWS_WITH(slice(scalar_tensor(1), 0, 0, 1), doctest::Contains("slice: axis 0 is out of range"));
}

TEST_CASE("concat: order and axes") {
  Tensor a = from_vector<double>({1, 2, 3, 4}, {2, 2}), b = from_vector<double>({5, 6}, {2, 1});
  CHECK(concat({a, b}, 1).shape() == Shape{2, 3});
  CHECK(concat({a, b}, 1).to_vector<double>() == std::vector<double>{1, 2, 5, 3, 4, 6});
  CHECK(concat({b, a, b}, -1).to_vector<double>() == std::vector<double>{5, 1, 2, 5, 6, 3, 4, 6});
  Tensor c = from_vector<double>({7, 8}, {1, 2});
  CHECK(concat({a, c}, 0).to_vector<double>() == std::vector<double>{1, 2, 3, 4, 7, 8});
  CHECK(concat({c, a}, 0).to_vector<double>() == std::vector<double>{7, 8, 1, 2, 3, 4});
  CHECK(concat({a}, 0).to_vector<double>() == a.to_vector<double>());
  CHECK(concat({a, zeros({2, 0}, DType::f64)}, 1).to_vector<double>() == a.to_vector<double>());
  Tensor i = concat({arange(2, DType::i32), arange(3, DType::i32)}, 0);
  CHECK(i.dtype() == DType::i32);
  CHECK(i.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 0, 1, 2});
}

TEST_CASE("concat: gradients split back to each input") {
  check_op("concat axis 1",
           [](auto& t) {
             return concat({t[0], t[1], t[2]}, 1);
           },
           {leaf({2, 3, 2}, 9), leaf({2, 1, 2}, 10), leaf({2, 4, 2}, 11)});
  check_op("concat same input twice", [](auto& t) { return concat({t[0], t[0]}, 0); }, {leaf({2, 3}, 12)});
  check_op("concat with a frozen input",
           [](auto& t) {
             return concat({t[0], t[1]}, -1);
           },
           {random_tensor({3, 2}, 13), leaf({3, 3}, 14)});
}

TEST_CASE("concat: errors") {
  Tensor a = zeros({2, 2}, DType::f64);
  CHECK_THROWS_WITH(concat({}, 0), doctest::Contains("concat: expected at least one tensor"));
  CHECK_THROWS_WITH(concat({a, Tensor()}, 0), doctest::Contains("concat: tensor 1 is undefined"));
  CHECK_THROWS_WITH(concat({a, zeros({2, 2})}, 0), doctest::Contains("concat: dtype mismatch between f64[2, 2] cpu"));
  CHECK_THROWS_WITH(
      concat({a, zeros({2, 3}, DType::f64)}, 0),
      doctest::Contains("concat: tensor 1 f64[2, 3] cpu does not match tensor 0 f64[2, 2] cpu outside axis 0"));
  CHECK_THROWS_WITH(concat({a, zeros({2, 2, 1}, DType::f64)}, 1),
                    doctest::Contains("concat: tensor 1 f64[2, 2, 1] cpu"));
  CHECK_THROWS_WITH(concat({a, a}, 2), doctest::Contains("concat: axis 2 is out of range"));
  CHECK_THROWS_WITH(concat({scalar_tensor(1), scalar_tensor(2)}, 0),
                    doctest::Contains("concat: axis 0 is out of range"));
}
