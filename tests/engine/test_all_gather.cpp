// Rows spread over ranks (threads standing in for processes) put back together: a contiguous
// block per rank gathered on one rank, in pieces of any size, and the bad-count message.
#include <doctest/doctest.h>

#include <mutex>
#include <vector>

#include "engine/all_gather.h"
#include "engine/ops.h"
#include "tests/thread_world.h"

using namespace mcdl;
using namespace mcdl::testing;

TEST_CASE("gather_blocks: each rank's block lands in order on the root only, in pieces of any size") {
  // 7 rows of 3 values; rank 1 holds none, rank 3 four; row i holds 10·i, 10·i + 1, 10·i + 2.
  const std::vector<std::pair<int64_t, int64_t>> blocks = {{0, 2}, {2, 2}, {2, 3}, {3, 7}};
  std::vector<int64_t> whole;
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 3; ++j) whole.push_back(10 * i + j);
  const size_t row_bytes = 3 * sizeof(int64_t);
  for (int root : {0, 2}) {
    for (size_t piece_bytes : {size_t(0), row_bytes, 2 * row_bytes + 5, 3 * row_bytes, size_t(1) << 30}) {
      CAPTURE(root);
      CAPTURE(piece_bytes);
      std::mutex mutex;
      std::vector<Tensor> got(blocks.size());
      ThreadWorld(4).run([&](Collective& world) {
        const auto [begin, end] = blocks[static_cast<size_t>(world.rank())];
        const std::vector<int64_t> own(whole.begin() + begin * 3, whole.begin() + end * 3);
        Tensor all = gather_blocks(world, from_vector<int64_t>(own, {end - begin, 3}), blocks, root, piece_bytes);
        const std::lock_guard lock(mutex);
        got[static_cast<size_t>(world.rank())] = all;
      });
      for (int r = 0; r < 4; ++r) {
        CAPTURE(r);
        if (r != root) {
          CHECK_FALSE(got[static_cast<size_t>(r)].defined());
          continue;
        }
        REQUIRE(got[static_cast<size_t>(r)].shape() == Shape{7, 3});
        CHECK(got[static_cast<size_t>(r)].to_vector<int64_t>() == whole);
      }
    }
  }
}

TEST_CASE("gather_blocks: one process returns its rows, and a block that does not match is refused") {
  const auto one = single_process();
  const Tensor rows = from_vector<float>({1, 2, 3, 4}, {2, 2});
  CHECK(gather_blocks(*one, rows, {{0, 2}}, 0, 4).to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK_THROWS_WITH(gather_blocks(*one, rows, {{0, 3}}, 0),
                    doctest::Contains("gather_blocks: rank 0 has 2 rows, but its block says otherwise"));
}
