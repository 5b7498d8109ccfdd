#include "engine/all_gather.h"

#include <algorithm>

#include "engine/error.h"

namespace mcdl {
namespace {

// The bytes of one row of `rows` [n, ...], whatever n is.
size_t row_bytes(const Tensor& rows) {
  size_t bytes = dtype_size(rows.dtype());
  for (int64_t axis = 1; axis < rows.dim(); ++axis) bytes *= static_cast<size_t>(rows.size(axis));
  return bytes;
}

}  // namespace

Tensor all_gather_rows(Collective& world, const Tensor& local, const std::vector<int64_t>& rows_per_rank) {
  check(local.defined() && local.dim() >= 1, "all_gather_rows: expected rows, got ", local);
  check(rows_per_rank.size() == static_cast<size_t>(world.size()) &&
            rows_per_rank[static_cast<size_t>(world.rank())] == local.size(0),
        "all_gather_rows: rank ", world.rank(), " has ", local.size(0), " rows, but the counts say otherwise");
  Shape shape = local.shape();
  shape[0] = 0;
  for (int64_t rows : rows_per_rank) shape[0] += rows;
  std::vector<size_t> counts;
  for (int64_t rows : rows_per_rank) counts.push_back(static_cast<size_t>(rows) * row_bytes(local));
  if (DeviceTransport* transport = world.device_transport(); transport && local.device().is_cuda()) {
    Tensor all = empty(shape, local.dtype(), local.device());
    transport->all_gather(local.raw_data(), local.nbytes(), all.raw_data(), counts);
    return all;
  }
  const Tensor send = local.detach().to(Device::cpu());
  Tensor all = empty(shape, local.dtype(), Device::cpu());
  world.all_gather(send.raw_data(), send.nbytes(), all.raw_data(), counts);
  return all.to(local.device());
}

void broadcast_tensor(Collective& world, Tensor& data, int root) {
  check(data.defined(), "broadcast_tensor: expected a tensor");
  if (DeviceTransport* transport = world.device_transport(); transport && data.device().is_cuda()) {
    transport->broadcast(data.raw_data(), data.nbytes(), root);
    return;
  }
  Tensor host = data.detach().to(Device::cpu());
  world.broadcast(host.raw_data(), host.nbytes(), root);
  if (!data.device().is_cpu()) data = host.to(data.device());
}

Shape RowBlocks::shape() const {
  Shape whole = own.shape();
  whole[0] = blocks.empty() ? 0 : blocks.back().second;
  return whole;
}

BlockGather::BlockGather(const Collective& world, Tensor local, std::vector<std::pair<int64_t, int64_t>> blocks,
                         int root, size_t piece_bytes)
    : local_(std::move(local)), blocks_(std::move(blocks)), rank_(world.rank()), root_(root) {
  const auto me = static_cast<size_t>(rank_);
  check(local_.defined() && local_.device().is_cpu() && local_.dim() >= 1, "gather_blocks: expected host rows, got ",
        local_);
  check(blocks_.size() == static_cast<size_t>(world.size()) &&
            blocks_[me].second - blocks_[me].first == local_.size(0),
        "gather_blocks: rank ", rank_, " has ", local_.size(0), " rows, but its block says otherwise");
  rows_ = blocks_.back().second;
  row_bytes_ = row_bytes(local_);
  piece_rows_ = std::max<int64_t>(1, static_cast<int64_t>(piece_bytes / std::max<size_t>(row_bytes_, 1)));
  if (rank_ == root_) piece_.resize(static_cast<size_t>(std::min(rows_, piece_rows_)) * row_bytes_);
}

void BlockGather::send_next(Collective& world, const std::function<void(const void* data, size_t bytes)>& receive) {
  check(!done(), "gather_blocks: every piece was sent already");
  const auto me = static_cast<size_t>(rank_);
  const int64_t last = std::min(rows_, first_ + piece_rows_);
  std::vector<size_t> counts;  // each rank's rows of [first_, last)
  for (const auto& [begin, end] : blocks_)
    counts.push_back(static_cast<size_t>(std::max<int64_t>(0, std::min(end, last) - std::max(begin, first_))) *
                     row_bytes_);
  const int64_t from = std::max(blocks_[me].first, first_) - blocks_[me].first;
  const auto* mine = static_cast<const char*>(local_.raw_data());
  const bool receives = rank_ == root_;
  world.gather(counts[me] > 0 ? mine + static_cast<size_t>(from) * row_bytes_ : nullptr, counts[me],
               receives ? piece_.data() : nullptr, counts, root_);
  const size_t bytes = static_cast<size_t>(last - first_) * row_bytes_;
  first_ = last;
  if (receives) receive(piece_.data(), bytes);
}

void gather_blocks(Collective& world, const Tensor& local, const std::vector<std::pair<int64_t, int64_t>>& blocks,
                   int root, const std::function<void(const void* data, size_t bytes)>& receive, size_t piece_bytes) {
  BlockGather gather(world, local, blocks, root, piece_bytes);
  while (!gather.done()) gather.send_next(world, receive);
}

}  // namespace mcdl
