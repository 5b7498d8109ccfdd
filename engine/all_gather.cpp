#include "engine/all_gather.h"

#include "engine/error.h"

namespace mcdl {

Tensor all_gather_rows(Collective& world, const Tensor& local, const std::vector<int64_t>& rows_per_rank) {
  check(local.defined() && local.device().is_cpu() && local.dim() >= 1, "all_gather_rows: expected host rows, got ",
        local);
  check(rows_per_rank.size() == static_cast<size_t>(world.size()) &&
            rows_per_rank[static_cast<size_t>(world.rank())] == local.size(0),
        "all_gather_rows: rank ", world.rank(), " has ", local.size(0), " rows, but the counts say otherwise");
  Shape shape = local.shape();
  shape[0] = 0;
  for (int64_t rows : rows_per_rank) shape[0] += rows;
  Tensor all = empty(shape, local.dtype(), Device::cpu());
  size_t row_bytes = dtype_size(local.dtype());
  for (size_t axis = 1; axis < shape.size(); ++axis) row_bytes *= static_cast<size_t>(shape[axis]);
  std::vector<size_t> counts;
  for (int64_t rows : rows_per_rank) counts.push_back(static_cast<size_t>(rows) * row_bytes);
  world.all_gather(local.raw_data(), local.nbytes(), all.raw_data(), counts);
  return all;
}

std::vector<int64_t> all_gather_values(Collective& world, const std::vector<int64_t>& local,
                                       const std::vector<int64_t>& count_per_rank) {
  check(count_per_rank.size() == static_cast<size_t>(world.size()) &&
            count_per_rank[static_cast<size_t>(world.rank())] == static_cast<int64_t>(local.size()),
        "all_gather_values: rank ", world.rank(), " has ", local.size(), " values, but the counts say otherwise");
  int64_t total = 0;
  std::vector<size_t> counts;
  for (int64_t n : count_per_rank) {
    total += n;
    counts.push_back(static_cast<size_t>(n) * sizeof(int64_t));
  }
  std::vector<int64_t> all(static_cast<size_t>(total));
  world.all_gather(local.data(), local.size() * sizeof(int64_t), all.data(), counts);
  return all;
}

}  // namespace mcdl
