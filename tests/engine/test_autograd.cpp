#include <doctest/doctest.h>

#include <cmath>

#include "engine/ops/linalg.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

TEST_CASE("autograd: a leaf accumulates over two backward passes") {
  Tensor w = from_vector<double>({1, 2, 3}, {1, 3}).set_requires_grad(true);
  Tensor x = from_vector<double>({1, 1, 1}, {1, 3});
  for (int pass = 0; pass < 2; ++pass) linear(x, w).backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{2, 2, 2});
  w.zero_grad();
  CHECK_FALSE(w.grad().defined());
}

TEST_CASE("autograd: no-grad scope records nothing; detach cuts history") {
  Tensor w = from_vector<double>({1, 2}, {1, 2}).set_requires_grad(true);
  Tensor x = from_vector<double>({3, 4}, {1, 2});
  {
    NoGradGuard no_grad;
    Tensor y = linear(x, w);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  Tensor y = linear(x, w);
  CHECK(y.requires_grad());
  Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.storage() == y.storage());
}

TEST_CASE("autograd: errors for bad backward calls") {
  Tensor w = from_vector<double>({1, 2}, {1, 2}).set_requires_grad(true);
  Tensor x = from_vector<double>({3, 4, 5, 6}, {2, 2});
  CHECK_THROWS_WITH(linear(x, w).backward(), doctest::Contains("backward: expected a scalar"));
  CHECK_THROWS_WITH(scalar_tensor(1).backward(), doctest::Contains("does not require grad"));
  Tensor y = linear(from_vector<double>({3, 4}, {1, 2}), w);
  y.backward();
  CHECK_THROWS_WITH(y.backward(), doctest::Contains("already released"));
  Tensor z = linear(from_vector<double>({3, 4}, {1, 2}), w);
  z.backward(true);
  CHECK_NOTHROW(z.backward());
  CHECK_THROWS_WITH(linear(x, w).set_requires_grad(false), doctest::Contains("only a leaf"));
  CHECK_THROWS_WITH(zeros({2}, DType::i64).set_requires_grad(true), doctest::Contains("only f32 and f64"));
}

TEST_CASE("autograd: saved tensors are freed with the graph (no leak across iterations)") {
  Tensor w = random_tensor({64, 64}, 1).set_requires_grad(true);
  auto step = [&] {
    Tensor h = random_tensor({32, 64}, 2);
    for (int layer = 0; layer < 4; ++layer) h = linear(h, w);
    linear(matmul(random_tensor({1, 32}, 3), h), random_tensor({1, 64}, 5)).backward();
  };
  step();  // creates w.grad
  const int64_t settled = storage_live_bytes(Device::cpu());
  for (int i = 0; i < 5; ++i) step();
  CHECK(storage_live_bytes(Device::cpu()) == settled);

  // A graph still referenced keeps its activations; dropping the output frees them.
  int64_t before = storage_live_bytes(Device::cpu());
  {
    Tensor h = linear(random_tensor({32, 64}, 4), w);
    for (int layer = 0; layer < 4; ++layer) h = linear(h, w);
    CHECK(storage_live_bytes(Device::cpu()) > before);
  }
  CHECK(storage_live_bytes(Device::cpu()) == before);
}

TEST_CASE("tensor: creation, conversion and views") {
  CHECK(arange(4).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(full({2}, 2.5).to_vector<float>() == std::vector<float>{2.5f, 2.5f});
  CHECK(ones({2, 2}, DType::u8).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1, 1});
  Tensor x = from_vector<float>({1.0f, 1.00390625f, -3.0f}, {3});
  CHECK(x.to(DType::bf16).to_vector<float>() == std::vector<float>{1.0f, 1.0f, -3.0f});  // ties to even
  CHECK(from_vector<float>({1.01171875f}, {1}).to(DType::bf16).to_vector<float>()[0] == 1.015625f);
  Tensor v = view_of(arange(6, DType::f32), {2}, 3);
  CHECK(v.to_vector<float>() == std::vector<float>{3, 4});
  CHECK(scalar_tensor(7).item() == 7.0);
  // Out-of-range float → integer conversions are defined: truncate, then wrap; NaN → 0.
  CHECK(from_vector<double>({-5.0, 300.7, NAN, -1.5}, {4}).to(DType::u8).to_vector<int64_t>() ==
        std::vector<int64_t>{251, 44, 0, 255});
  CHECK(from_vector<double>({3e9, -2.5, 1e30}, {3}).to(DType::i32).to_vector<int64_t>() ==
        std::vector<int64_t>{-1294967296, -2, -1});
  CHECK_THROWS_WITH(view_of(arange(6), {4}, 3), doctest::Contains("exceeds the storage"));
  CHECK_THROWS_WITH(empty({2, -1}), doctest::Contains("negative dimension"));
  CHECK_THROWS_WITH(x.data<double>(), doctest::Contains("data<f64>: tensor is f32[3] cpu"));
  CHECK_THROWS_WITH(x.item(), doctest::Contains("item: expected a tensor with one element"));
  CHECK_THROWS_WITH(from_vector<float>({1, 2}, {3}), doctest::Contains("do not fill shape [3]"));
  CHECK_THROWS_WITH(Tensor().shape(), doctest::Contains("undefined"));
}
