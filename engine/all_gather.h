// Rows spread over the processes of a run, put back together in rank order on every rank: what a
// split evaluation (mcdl/evaluation/evaluation_set.h) needs. The counts are known to every rank.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/collective.h"
#include "engine/tensor.h"

namespace mcdl {

// [Σ rows, ...] from each rank's `local` [rows_per_rank[rank], ...]: host tensors of one dtype and
// row shape (a rank without rows passes an empty tensor of that shape).
Tensor all_gather_rows(Collective& world, const Tensor& local, const std::vector<int64_t>& rows_per_rank);
std::vector<int64_t> all_gather_values(Collective& world, const std::vector<int64_t>& local,
                                       const std::vector<int64_t>& count_per_rank);

}  // namespace mcdl
