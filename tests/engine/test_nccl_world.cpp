// The world of processes started without MPI (RANK and WORLD_SIZE only): every collective
// through NCCL, bootstrapped from NCCL_COMM_ID; here through the emulated NCCL, ranks as threads.
#include <doctest/doctest.h>

#include <cstdlib>
#include <mutex>
#include <thread>

#include "engine/collective.h"
#include "engine/nccl_world.h"

using namespace mcdl;

TEST_CASE("nccl world: host collectives through NCCL give every rank the same bytes as MPI would") {
  ::setenv("NCCL_COMM_ID", "127.0.0.1:29611", 1);
  for (int size : {1, 2, 3}) {
    CAPTURE(size);
    std::mutex mutex;
    std::vector<std::string> gathered(static_cast<size_t>(size)), broadcast(static_cast<size_t>(size));
    std::string at_root;
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
      threads.emplace_back([&, r] {
        const std::unique_ptr<Collective> world = nccl_world(r, size);
        // Rank r sends r + 1 bytes 'a' + r: uneven counts.
        const std::string mine(static_cast<size_t>(r + 1), static_cast<char>('a' + r));
        std::vector<size_t> counts;
        for (int q = 0; q < size; ++q) counts.push_back(static_cast<size_t>(q + 1));
        std::string all(static_cast<size_t>(size * (size + 1) / 2), '?');
        world->all_gather(mine.data(), mine.size(), all.data(), counts);
        std::string root_copy(all.size(), '?');
        world->gather(mine.data(), mine.size(), r == size - 1 ? root_copy.data() : nullptr, counts, size - 1);
        std::string word = r == 0 ? "from rank 0" : "...........";
        world->broadcast(word.data(), word.size(), 0);
        world->barrier();
        const std::lock_guard lock(mutex);
        CHECK(world->rank() == r);
        CHECK(world->size() == size);
        CHECK(world->transport() == "NCCL");
        CHECK(world->device_transport() != nullptr);
        gathered[static_cast<size_t>(r)] = all;
        broadcast[static_cast<size_t>(r)] = word;
        if (r == size - 1) at_root = root_copy;
      });
    for (auto& t : threads) t.join();
    std::string expected;
    for (int q = 0; q < size; ++q) expected += std::string(static_cast<size_t>(q + 1), static_cast<char>('a' + q));
    for (int r = 0; r < size; ++r) {
      CHECK(gathered[static_cast<size_t>(r)] == expected);
      CHECK(broadcast[static_cast<size_t>(r)] == "from rank 0");
    }
    CHECK(at_root == expected);
  }
  ::unsetenv("NCCL_COMM_ID");
}

TEST_CASE("nccl world: without NCCL_COMM_ID it says what to set") {
  ::unsetenv("NCCL_COMM_ID");
  CHECK_THROWS_WITH(nccl_world(0, 2), doctest::Contains("NCCL_COMM_ID=<host of rank 0>:<free port>"));
}
