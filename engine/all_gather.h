// Rows spread over the processes of a run, put back together in rank order on every rank: what a
// split evaluation (mcdl/evaluation/evaluation_set.h) needs. The counts are known to every rank.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "engine/collective.h"
#include "engine/error.h"
#include "engine/tensor.h"

namespace mcdl {

// [Σ rows, ...] from each rank's `local` [rows_per_rank[rank], ...]: tensors of one dtype, row
// shape and device (a rank without rows passes an empty tensor of that shape), the result on that
// device, without a graph. Device rows travel through the world's device transport when it has
// one, else through host memory: the same bytes either way.
Tensor all_gather_rows(Collective& world, const Tensor& local, const std::vector<int64_t>& rows_per_rank);
// Rank `root`'s `data` into every rank's `data` (same shape, dtype and device on every rank), on
// the device transport for device tensors when there is one.
void broadcast_tensor(Collective& world, Tensor& data, int root);
// A tensor whose rows the ranks of a world hold in contiguous blocks, in rank order, each rank
// only its own (a memory bank across processes).
struct RowBlocks {
  Tensor own;  // this rank's rows: blocks[rank] of the whole
  std::vector<std::pair<int64_t, int64_t>> blocks;  // each rank's [begin, end); the last end is the row count
  Shape shape() const;  // the whole tensor's
};
// The rows of `blocks` sent to rank `root` in order, one piece per call: there each piece is
// consecutive rows of the whole, at most piece_bytes (at least one row), so the root never holds
// more than one piece of the other ranks' rows; the others only send. `local` is this rank's block
// on the host, kept until the last piece. Each exchange stays within MPI's int counts however large
// the whole. Every rank makes the same calls, in the same order.
class BlockGather {
 public:
  BlockGather(const Collective& world, Tensor local, std::vector<std::pair<int64_t, int64_t>> blocks, int root,
              size_t piece_bytes = size_t(1) << 28);
  bool done() const { return first_ >= rows_; }
  // One gather on `world` (the one made with, or a channel of the same ranks): on the root,
  // receive(data, bytes) gets the next piece.
  void send_next(Collective& world, const std::function<void(const void* data, size_t bytes)>& receive);

 private:
  Tensor local_;
  std::vector<std::pair<int64_t, int64_t>> blocks_;
  int rank_, root_;
  size_t row_bytes_;
  int64_t rows_, piece_rows_;
  int64_t first_ = 0;  // the next piece's first row
  std::vector<char> piece_;  // the root's receive buffer
};
// All of BlockGather's pieces at once: receive(data, bytes) gets them in order on the root.
void gather_blocks(Collective& world, const Tensor& local, const std::vector<std::pair<int64_t, int64_t>>& blocks,
                   int root, const std::function<void(const void* data, size_t bytes)>& receive,
                   size_t piece_bytes = size_t(1) << 28);
// Every rank's `local` values in rank order (count_per_rank[r] of them from rank r), on every rank.
template <class T>
std::vector<T> all_gather_values(Collective& world, const std::vector<T>& local,
                                 const std::vector<int64_t>& count_per_rank) {
  check(count_per_rank.size() == static_cast<size_t>(world.size()) &&
            count_per_rank[static_cast<size_t>(world.rank())] == static_cast<int64_t>(local.size()),
        "all_gather_values: rank ", world.rank(), " has ", local.size(), " values, but the counts say otherwise");
  int64_t total = 0;
  std::vector<size_t> counts;
  for (int64_t n : count_per_rank) {
    total += n;
    counts.push_back(static_cast<size_t>(n) * sizeof(T));
  }
  std::vector<T> all(static_cast<size_t>(total));
  world.all_gather(local.data(), local.size() * sizeof(T), all.data(), counts);
  return all;
}

}  // namespace mcdl
