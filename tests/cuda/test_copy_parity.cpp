// The device basics: copies both ways, fill, dtype conversion, clone, and gradient
// accumulation on the device through autodiff.
#include <doctest/doctest.h>

#include "engine/autograd.h"
#include "kernels/cuda/runtime.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

TEST_CASE("cuda: copies round-trip every dtype bit for bit") {
  const Tensor values = random_tensor({3, 197}, 11, -100, 100);
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::u8}) {
    CAPTURE(dtype_name(dtype));
    Tensor host = (dtype == DType::u8 ? random_tensor({3, 197}, 12, 0, 255) : values).to(dtype);
    Tensor device = host.to(Device::cuda());
    CHECK(device.device().is_cuda());
    CHECK(device.to(Device::cpu()).to_vector<double>() == host.to_vector<double>());
    CHECK(device.clone().to(Device::cpu()).to_vector<double>() == host.to_vector<double>());
  }
}

TEST_CASE("cuda: fill and conversion match the CPU for every dtype pair") {
  const Tensor values = random_tensor({1000}, 13, -300, 300);
  emu::for_each_thread_order([&](emu::ThreadOrder) {
    for (DType from : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::u8})
      for (DType to : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::u8}) {
        CAPTURE(dtype_name(from));
        CAPTURE(dtype_name(to));
        Tensor host = values.to(from);
        CHECK(host.to(Device::cuda()).to(to).to(Device::cpu()).to_vector<double>() == host.to(to).to_vector<double>());
      }
    CHECK(full({197}, 2.5, DType::bf16, Device::cuda()).to(Device::cpu()).to_vector<float>() ==
          std::vector<float>(197, 2.5f));
    CHECK(zeros({3}, DType::i64, Device::cuda()).to(Device::cpu()).to_vector<int64_t>() ==
          std::vector<int64_t>{0, 0, 0});
  });
}

TEST_CASE("cuda: gradients accumulate on the device") {
  Tensor w = full({5}, 1.0, DType::f32, Device::cuda()).set_requires_grad(true);
  for (int pass = 0; pass < 3; ++pass) run_backward(w, full({5}, 0.5, DType::f32, Device::cuda()), false);
  CHECK(w.grad().device().is_cuda());
  CHECK(w.grad().to(Device::cpu()).to_vector<float>() == std::vector<float>(5, 1.5f));
}

TEST_CASE("cuda: device selection") {
  CHECK(select_device("cpu") == Device::cpu());
  CHECK(select_device("cuda") == Device::cuda());
  CHECK(select_device("auto") == Device::cuda());
  CHECK_THROWS_WITH(select_device("gpu"), doctest::Contains("expected cpu, cuda or auto, got 'gpu'"));
}

TEST_CASE("cuda: device memory is counted and released") {
  const int64_t before = storage_live_bytes(Device::cuda());
  {
    Tensor t = zeros({1000}, DType::f32, Device::cuda());
    CHECK(storage_live_bytes(Device::cuda()) == before + 4000);
  }
  CHECK(storage_live_bytes(Device::cuda()) == before);
  CHECK(cuda::device_available());
  CHECK_THROWS_WITH(zeros({2}, DType::f32, Device::cuda(1)), doctest::Contains("only cuda:0 is supported"));
}
