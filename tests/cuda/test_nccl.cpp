// NCCL through the engine's loader: the real libnccl.so.2 in the GPU suite, the emulated NCCL in
// the emulated one. One rank, so that it runs on any single GPU (the world-size-1 check);
// several ranks are tested through the emulated NCCL in tests/engine/test_nccl_transport.cpp.
#include <doctest/doctest.h>

#include <cstdlib>

#include "engine/tensor.h"
#include "kernels/cuda/nccl.h"
#include "kernels/cuda/runtime.h"

using namespace mcdl;

TEST_CASE("nccl: one rank's all-gather and broadcast leave its device bytes as they were") {
  REQUIRE(cuda::device_available());
  INFO(cuda::nccl_description());
  Tensor send = empty({5, 7}, DType::f32, Device::cpu());
  for (int64_t i = 0; i < 35; ++i) send.data<float>()[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const Tensor device_send = send.to(Device::cuda());
  Tensor receive = zeros({5, 7}, DType::f32, Device::cuda());
  cuda::NcclCommunicator communicator(cuda::nccl_unique_id(), 0, 1);
  communicator.all_gather(device_send.raw_data(), device_send.nbytes(), receive.raw_data(), {device_send.nbytes()});
  CHECK(receive.to_vector<float>() == send.to_vector<float>());
  communicator.broadcast(receive.raw_data(), receive.nbytes(), 0);
  CHECK(receive.to_vector<float>() == send.to_vector<float>());
  CHECK_THROWS_WITH(communicator.all_gather(device_send.raw_data(), 4, receive.raw_data(), {8}),
                    doctest::Contains("the counts do not match the 1 ranks"));
}

TEST_CASE("nccl: a library that cannot be loaded is named, with what to do") {
  ::setenv("MCDL_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  CHECK_THROWS_WITH(cuda::nccl_description(), doctest::Contains("NCCL could not be loaded: /nonexistent/libnccl.so.2"));
  CHECK_THROWS_WITH(cuda::nccl_unique_id(), doctest::Contains("MCDL_NCCL_LIBRARY"));
  ::unsetenv("MCDL_NCCL_LIBRARY");
  CHECK(cuda::nccl_description().find("NCCL 2.") != std::string::npos);
}
