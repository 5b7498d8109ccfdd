// Rows spread over the processes of a run, put back together in rank order on every rank: what a
// split evaluation (mcdl/evaluation/evaluation_set.h) needs. The counts are known to every rank.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/collective.h"
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
// Rows held in contiguous blocks (blocks[r] = rank r's [begin, end) of the whole, in rank order),
// put together on rank `root` only: [Σ rows, ...] there, an undefined tensor elsewhere. `local` is
// this rank's block on the host. The rows travel in pieces of at most piece_bytes (at least one
// row), so that each exchange stays within MPI's int counts however large the whole.
Tensor gather_blocks(Collective& world, const Tensor& local, const std::vector<std::pair<int64_t, int64_t>>& blocks,
                     int root, size_t piece_bytes = size_t(1) << 30);
std::vector<int64_t> all_gather_values(Collective& world, const std::vector<int64_t>& local,
                                       const std::vector<int64_t>& count_per_rank);

}  // namespace mcdl
