// NCCL as the device transport between ranks, through the emulated NCCL (kernels/emu/nccl_emu.cpp)
// with ranks as threads on the emulated device: the engine's loading, id exchange and calls, and
// that device data gathered through NCCL has the bits of the host path. (The real library is
// exercised on a GPU by tests/cuda/test_nccl.cpp and tools/gpu_check.sh.)
#include <doctest/doctest.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "engine/all_gather.h"
#include "engine/autograd.h"
#include "engine/nccl_transport.h"
#include "engine/ops.h"
#include "engine/shards.h"
#include "kernels/cuda/nccl.h"
#include "tests/gradcheck.h"
#include "tests/thread_world.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// This rank's device transport through NCCL (checked to exist).
void join_nccl(Collective& rank) {
  std::string why;
  std::unique_ptr<DeviceTransport> transport = make_nccl_transport(rank, why);
  if (!transport) throw std::runtime_error("no NCCL transport: " + why);
  rank.set_device_transport(std::move(transport));
}

// Rows [rank's count, 3] whose values say which rank and row they come from.
Tensor rank_rows(int rank, int64_t rows, Device device) {
  Tensor t = zeros({rows, 3}, DType::f32, Device::cpu());
  float* v = t.data<float>();
  for (int64_t i = 0; i < rows * 3; ++i) v[i] = static_cast<float>(rank * 100 + i) + 0.25f;
  return t.to(device);
}

}  // namespace

TEST_CASE("nccl transport: gathered and broadcast device rows are the host path's bytes") {
  for (int size : {1, 2, 3, 4}) {
    for (bool uneven : {false, true}) {
      CAPTURE(size);
      CAPTURE(uneven);
      std::vector<int64_t> rows_per_rank;
      for (int r = 0; r < size; ++r) rows_per_rank.push_back(uneven ? (r % 2 == 0 ? 2 : 0) + r : 3);
      std::mutex mutex;
      std::vector<std::vector<float>> through_nccl(static_cast<size_t>(size)), through_host(static_cast<size_t>(size));
      std::vector<std::vector<float>> broadcast(static_cast<size_t>(size));
      ThreadWorld(size).run([&](Collective& rank) {
        const Tensor mine = rank_rows(rank.rank(), rows_per_rank[static_cast<size_t>(rank.rank())], Device::cuda());
        const Tensor host = all_gather_rows(rank, mine, rows_per_rank);
        join_nccl(rank);
        const Tensor device = all_gather_rows(rank, mine, rows_per_rank);
        Tensor shared = rank.rank() == size - 1 ? rank_rows(rank.rank(), 2, Device::cuda())
                                                : zeros({2, 3}, DType::f32, Device::cuda());
        broadcast_tensor(rank, shared, size - 1);
        const std::lock_guard lock(mutex);
        CHECK(device.device().is_cuda());
        through_host[static_cast<size_t>(rank.rank())] = host.to_vector<float>();
        through_nccl[static_cast<size_t>(rank.rank())] = device.to_vector<float>();
        broadcast[static_cast<size_t>(rank.rank())] = shared.to_vector<float>();
      });
      std::vector<float> expected;
      for (int r = 0; r < size; ++r) {
        const std::vector<float> part = rank_rows(r, rows_per_rank[static_cast<size_t>(r)], Device::cpu()).to_vector<float>();
        expected.insert(expected.end(), part.begin(), part.end());
      }
      const std::vector<float> last = rank_rows(size - 1, 2, Device::cpu()).to_vector<float>();
      for (int r = 0; r < size; ++r) {
        CHECK(through_host[static_cast<size_t>(r)] == expected);
        CHECK(through_nccl[static_cast<size_t>(r)] == expected);
        CHECK(broadcast[static_cast<size_t>(r)] == last);
      }
    }
  }
}

namespace {

// The two-layer model and batch-statistic loss of tests/engine/test_shards.cpp, on the device.
struct StepGradients {
  std::vector<float> w1, w2;
};

StepGradients sharded_step(Collective* world) {
  const Device device = Device::cuda();
  const Tensor w1 = random_tensor({6, 5}, 11, -1, 1, DType::f32).to(device).set_requires_grad(true);
  const Tensor w2 = random_tensor({5, 4}, 12, -1, 1, DType::f32).to(device).set_requires_grad(true);
  const Tensor images = random_tensor({8, 6}, 21, -1, 1, DType::f32).to(device);
  Shards shards(4, world);
  const std::vector<Tensor> out = shards.forward(images, [&](const Tensor& rows) {
    const Tensor hidden = sqrt(matmul(rows, w1) * matmul(rows, w1) + 1.0);
    return std::vector<Tensor>{matmul(hidden, w2), hidden};
  });
  const Tensor mean_probs = mean(softmax(out[0]), 0);
  const Tensor centred = out[1] - mean(out[1], 0, true);
  const Tensor loss = sum(mean_probs * log(mean_probs)) + mean(centred * centred);
  shards.backward(loss, {w1, w2});
  return {w1.grad().to_vector<float>(), w2.grad().to_vector<float>()};
}

}  // namespace

TEST_CASE("nccl transport: a sharded step on 2 ranks gives one process's gradients, bit for bit") {
  const StepGradients one = sharded_step(nullptr);
  for (bool nccl : {false, true}) {
    CAPTURE(nccl);
    std::mutex mutex;
    std::vector<StepGradients> ranks(2);
    ThreadWorld(2).run([&](Collective& rank) {
      if (nccl) join_nccl(rank);
      const StepGradients grads = sharded_step(&rank);
      const std::lock_guard lock(mutex);
      ranks[static_cast<size_t>(rank.rank())] = grads;
    });
    for (const StepGradients& grads : ranks) {
      CHECK(grads.w1 == one.w1);
      CHECK(grads.w2 == one.w2);
    }
  }
}

TEST_CASE("nccl transport: a library that does not load leaves every rank without it, told which rank and why") {
  ::setenv("MCDL_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  std::mutex mutex;
  std::vector<std::string> reasons(2);
  ThreadWorld(2).run([&](Collective& rank) {
    std::string why;
    const std::unique_ptr<DeviceTransport> transport = make_nccl_transport(rank, why);
    const std::lock_guard lock(mutex);
    CHECK(transport == nullptr);
    reasons[static_cast<size_t>(rank.rank())] = why;
  });
  ::unsetenv("MCDL_NCCL_LIBRARY");
  CHECK(reasons[0] == reasons[1]);
  CHECK(reasons[0].find("rank 0 of 2: NCCL could not be loaded: /nonexistent/libnccl.so.2") != std::string::npos);
  CHECK(reasons[0].find("rank 1 of 2:") != std::string::npos);
}

TEST_CASE("nccl transport: ranks that disagree on a call get an error from the emulated NCCL, not a hang") {
  // Rank 0 expects 4 bytes from each rank (NCCL's all-gather); rank 1 sends 8 (a group of
  // broadcasts): the calls differ, which NCCL would not notice (it would hang or corrupt memory).
  const cuda::NcclId id = cuda::nccl_unique_id();
  std::mutex mutex;
  std::vector<std::string> errors(2);
  ThreadWorld(2).run([&](Collective& rank) {
    cuda::NcclCommunicator communicator(id, rank.rank(), 2);
    const std::vector<size_t> counts = rank.rank() == 0 ? std::vector<size_t>{4, 4} : std::vector<size_t>{4, 8};
    Tensor send = zeros({static_cast<int64_t>(counts[static_cast<size_t>(rank.rank())])}, DType::u8, Device::cuda());
    Tensor receive = zeros({12}, DType::u8, Device::cuda());
    try {
      communicator.all_gather(send.raw_data(), send.nbytes(), receive.raw_data(), counts);
    } catch (const std::exception& e) {
      const std::lock_guard lock(mutex);
      errors[static_cast<size_t>(rank.rank())] = e.what();
    }
  });
  for (const std::string& error : errors)
    CHECK(error.find("invalid usage (the ranks made different calls") != std::string::npos);
}
