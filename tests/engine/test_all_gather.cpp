// Rows spread over ranks (threads standing in for processes) put back together: a contiguous
// block per rank gathered on one rank, in pieces of any size, and the bad-count message.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "engine/all_gather.h"
#include "engine/ops.h"
#include "tests/thread_world.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// The pieces one rank receives, in the order received.
struct Received {
  std::vector<int64_t> values;
  std::vector<size_t> piece_bytes;
};

std::function<void(const void*, size_t)> appending_to(Received& got) {
  return [&got](const void* data, size_t bytes) {
    const auto* values = static_cast<const int64_t*>(data);
    got.values.insert(got.values.end(), values, values + bytes / sizeof(int64_t));
    got.piece_bytes.push_back(bytes);
  };
}

}  // namespace

TEST_CASE("gather_blocks: each rank's block streams in order to the root only, in pieces of any size") {
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
      std::vector<Received> got(blocks.size());
      ThreadWorld(4).run([&](Collective& world) {
        const auto [begin, end] = blocks[static_cast<size_t>(world.rank())];
        const std::vector<int64_t> own(whole.begin() + begin * 3, whole.begin() + end * 3);
        gather_blocks(world, from_vector<int64_t>(own, {end - begin, 3}), blocks, root,
                      appending_to(got[static_cast<size_t>(world.rank())]), piece_bytes);
      });
      // Pieces of whole rows, at most piece_bytes (one row at least), all full but the last.
      const size_t most = std::max(row_bytes, piece_bytes / row_bytes * row_bytes);
      for (int r = 0; r < 4; ++r) {
        CAPTURE(r);
        const Received& received = got[static_cast<size_t>(r)];
        if (r != root) {
          CHECK(received.piece_bytes.empty());
          continue;
        }
        CHECK(received.values == whole);
        for (size_t p = 0; p < received.piece_bytes.size(); ++p) {
          CHECK(received.piece_bytes[p] % row_bytes == 0);
          if (p + 1 < received.piece_bytes.size()) CHECK(received.piece_bytes[p] == std::min(most, 7 * row_bytes));
        }
      }
    }
  }
}

TEST_CASE("gather_blocks: one process streams its rows, and a block that does not match is refused") {
  const auto one = single_process();
  const Tensor rows = from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  Received got;
  gather_blocks(*one, rows, {{0, 2}}, 0, appending_to(got), 16);
  CHECK(got.values == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(got.piece_bytes == std::vector<size_t>{16, 16});
  CHECK_THROWS_WITH(gather_blocks(*one, rows, {{0, 3}}, 0, appending_to(got)),
                    doctest::Contains("gather_blocks: rank 0 has 2 rows, but its block says otherwise"));
}
