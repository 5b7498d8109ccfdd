#include "engine/shards.h"

#include <cstring>

#include "engine/all_gather.h"
#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/ops.h"

namespace mcdl {
namespace {

// A forward's outputs as the other ranks need them before any bytes: their number, then per
// output its dtype, rank and sizes after the first (the rows, which every rank knows).
constexpr size_t kHeaderWords = 64, kMaxOutputs = 7, kWordsPerOutput = 9;

std::vector<int64_t> layout_header(const std::vector<Tensor>& outputs) {
  check(outputs.size() <= kMaxOutputs, "shards: at most ", kMaxOutputs, " outputs per forward, got ", outputs.size());
  std::vector<int64_t> header(kHeaderWords, -1);
  header[0] = static_cast<int64_t>(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = outputs[k];
    check(static_cast<size_t>(t.dim()) <= kWordsPerOutput - 2, "shards: output ", k, " has too many axes: ", t);
    int64_t* words = &header[1 + k * kWordsPerOutput];
    words[0] = static_cast<int64_t>(t.dtype());
    words[1] = t.dim();
    for (int64_t a = 1; a < t.dim(); ++a) words[1 + a] = t.size(a);
  }
  return header;
}

// Output k of a header, with `rows` rows: an empty tensor of its dtype and shape.
Tensor empty_output(const int64_t* header, int64_t k, int64_t rows, Device device) {
  const int64_t* words = &header[1 + static_cast<size_t>(k) * kWordsPerOutput];
  Shape shape{rows};
  for (int64_t a = 1; a < words[1]; ++a) shape.push_back(words[1 + a]);
  return empty(shape, static_cast<DType>(words[0]), device);
}

// A rank's shards of one output, one after the other, without a graph.
Tensor rows_of(const std::vector<Tensor>& shards) {
  NoGradGuard no_grad;
  return shards.size() == 1 ? shards[0].detach() : concat(shards, 0);
}

// sum (+)= grad, the first gradient taken as it is: the shards' gradients in shard order.
void add_in_order(Tensor& sum, const Tensor& grad) {
  if (sum.defined()) {
    accumulate_into(sum, grad, GradMode::Accumulate);
  } else {
    sum = grad;
  }
}

// Shard `images`' rows of an input of `blocks` blocks of `per_block` rows: its images' rows from
// each block, block after block.
Tensor shard_rows(const Tensor& input, std::pair<int64_t, int64_t> images, int64_t blocks, int64_t per_block) {
  if (blocks == 1) return slice(input, 0, images.first, images.second);
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < blocks; ++g)
    parts.push_back(slice(input, 0, g * per_block + images.first, g * per_block + images.second));
  return concat(parts, 0);
}

// Outputs in shard order (each shard's rows block after block, as shard_rows cut them) back in the
// input's order: block after block, each block's rows in image order.
Tensor block_order(const Tensor& by_shard, const std::vector<std::pair<int64_t, int64_t>>& images, int64_t blocks) {
  if (blocks == 1) return by_shard;
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < blocks; ++g) {
    int64_t start = 0;  // the shard's first row in `by_shard`
    for (const auto& [begin, end] : images) {
      const int64_t m = end - begin;
      if (m > 0) parts.push_back(slice(by_shard, 0, start + g * m, start + (g + 1) * m));
      start += blocks * m;
    }
  }
  return concat(parts, 0);
}

}  // namespace

Shards::Shards(std::optional<int64_t> count, Collective* world) : count_(count), world_(world) {
  check(!count || *count >= 1, "shards: the shard count must be at least 1, got ", count.value_or(0));
  const int n = ranks();
  check(n == 1 || count, "shards: ", n, " processes need a shard count (each runs S/", n, " shards)");
  if (!count) return;
  check(*count % n == 0, "--shards ", *count, " is not a multiple of the ", n,
        " processes: each process runs S/N of the shards; pick --shards ", n, " or a multiple of it");
  const int rank = world_ ? world_->rank() : 0;
  first_ = rank * (*count / n);
  last_ = first_ + *count / n;
}

std::vector<std::pair<int64_t, int64_t>> Shards::ranges(int64_t rows, int64_t count) {
  check(rows >= 0 && count >= 1, "shards: cannot cut ", rows, " rows into ", count, " shards");
  std::vector<std::pair<int64_t, int64_t>> result;
  const int64_t base = rows / count, longer = rows % count;
  int64_t begin = 0;
  for (int64_t s = 0; s < count; ++s) {
    const int64_t end = begin + base + (s < longer ? 1 : 0);
    result.emplace_back(begin, end);
    begin = end;
  }
  return result;
}

void Shards::set_local_shard(std::optional<int64_t> shard) {
  check(!shard || (count_ && *shard >= 0 && *shard < *count_), "shards: no shard ", shard.value_or(-1), " among ",
        count());
  local_shard_ = shard;
}

std::pair<int64_t, int64_t> Shards::positions_of_rank(int q, int64_t images) const {
  const int64_t per_rank = *count_ / ranks();
  const auto shard_images = ranges(images, *count_);
  return {shard_images[static_cast<size_t>(q * per_rank)].first,
          shard_images[static_cast<size_t>((q + 1) * per_rank - 1)].second};
}

std::pair<int64_t, int64_t> Shards::own_positions(int64_t images) const {
  if (ranks() == 1) return {0, images};
  return positions_of_rank(world_->rank(), images);
}

Tensor Shards::rows_everywhere(const Tensor& input, const std::vector<int64_t>& rows) const {
  const int64_t images = input.size(0);
  for (int64_t r : rows) check(r >= 0 && r < images, "shards: row ", r, " asked for, of ", images, " rows");
  NoGradGuard no_grad;
  if (ranks() == 1 || local_shard_) return index_select(input.detach(), HostIndex(rows, input.device()));
  const int n = ranks();
  std::vector<std::pair<int64_t, int64_t>> held;
  for (int q = 0; q < n; ++q) held.push_back(positions_of_rank(q, images));
  std::vector<int64_t> rows_per_rank(static_cast<size_t>(n), 0), mine;
  std::vector<int> holder;
  for (int64_t r : rows) {
    int q = 0;
    while (r >= held[static_cast<size_t>(q)].second) ++q;  // the ranks' images are contiguous, in rank order
    holder.push_back(q);
    ++rows_per_rank[static_cast<size_t>(q)];
    if (q == world_->rank()) mine.push_back(r);
  }
  const Tensor gathered =
      all_gather_rows(*world_, index_select(input.detach(), HostIndex(mine, input.device())), rows_per_rank);
  // `gathered` holds rank 0's rows in the order asked, then rank 1's, ...: back into the order asked.
  std::vector<int64_t> next(static_cast<size_t>(n), 0), order;
  for (int q = 1; q < n; ++q)
    next[static_cast<size_t>(q)] = next[static_cast<size_t>(q - 1)] + rows_per_rank[static_cast<size_t>(q - 1)];
  for (int q : holder) order.push_back(next[static_cast<size_t>(q)]++);
  return index_select(gathered, HostIndex(order, input.device()));
}

std::vector<Tensor> Shards::forward(const Tensor& input, const MultiForward& fn, int64_t blocks) {
  if (!count_ || input.size(0) == 0) return fn(input);
  if (local_shard_) return forward_local_shard(input, fn, *local_shard_);
  check(blocks >= 1 && input.size(0) % blocks == 0, "shards: ", input.size(0), " rows are not ", blocks,
        " blocks of one size");
  const int64_t per_block = input.size(0) / blocks;
  const auto images = ranges(per_block, *count_);
  std::vector<std::pair<int64_t, int64_t>> shard_ranges;  // each shard's rows, shard after shard
  for (const auto& [begin, end] : images) {
    const int64_t start = shard_ranges.empty() ? 0 : shard_ranges.back().second;
    shard_ranges.emplace_back(start, start + blocks * (end - begin));
  }
  std::vector<std::vector<Tensor>> parts;  // [output][shard] of this rank's shards
  for (int64_t s = first_; s < last_; ++s) {
    const auto [begin, end] = shard_ranges[static_cast<size_t>(s)];
    if (begin == end) continue;
    const std::vector<Tensor> outputs =
        cut(s, fn(shard_rows(input, images[static_cast<size_t>(s)], blocks, per_block)), end - begin);
    if (parts.empty()) parts.resize(outputs.size());
    check(outputs.size() == parts.size(), "shards: the forward gave ", outputs.size(), " outputs on shard ", s, " but ",
          parts.size(), " on the first");
    for (size_t k = 0; k < outputs.size(); ++k) parts[k].push_back(outputs[k]);
  }
  std::vector<Tensor> result;
  if (ranks() > 1) {
    result = gather_outputs(parts, input.size(0), input.device(), shard_ranges);
  } else {
    for (const auto& part : parts) result.push_back(part.size() == 1 ? part[0] : concat(part, 0));
  }
  for (Tensor& out : result) out = block_order(out, images, blocks);
  return result;
}

std::vector<Tensor> Shards::cut(int64_t shard, const std::vector<Tensor>& outputs, int64_t rows) {
  const bool record = grad_enabled();
  Piece piece{shard, {}, {}};
  std::vector<Tensor> kept;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& out = outputs[k];
    check(out.dim() >= 1 && out.size(0) == rows, "shards: output ", k, " of the forward is ", out, " for ", rows,
          " input rows; a sharded forward must give one row per input row");
    if (record && out.requires_grad()) {
      Tensor leaf = out.detach();
      leaf.set_requires_grad(true);
      piece.outputs.push_back(out);
      piece.leaves.push_back(leaf);
      kept.push_back(leaf);
    } else {
      kept.push_back(out);
    }
  }
  if (!piece.outputs.empty()) pieces_.push_back(std::move(piece));
  return kept;
}

std::vector<Tensor> Shards::gather_outputs(const std::vector<std::vector<Tensor>>& local, int64_t rows, Device device,
                                           const std::vector<std::pair<int64_t, int64_t>>& shard_ranges) {
  const int n = ranks();
  const int64_t per_rank = *count_ / n;
  std::vector<int64_t> rank_rows;
  for (int q = 0; q < n; ++q)
    rank_rows.push_back(shard_ranges[static_cast<size_t>((q + 1) * per_rank - 1)].second -
                        shard_ranges[static_cast<size_t>(q * per_rank)].first);
  // The outputs' layout, from the first rank that has rows (the others have none to say).
  std::vector<Tensor> firsts;
  for (const auto& part : local) firsts.push_back(part[0]);
  const std::vector<int64_t> header = local.empty() ? std::vector<int64_t>(kHeaderWords, -1) : layout_header(firsts);
  std::vector<int64_t> headers(kHeaderWords * static_cast<size_t>(n));
  world_->all_gather(header.data(), kHeaderWords * sizeof(int64_t), headers.data(),
                     std::vector<size_t>(static_cast<size_t>(n), kHeaderWords * sizeof(int64_t)));
  int reference = 0;
  while (rank_rows[static_cast<size_t>(reference)] == 0) ++reference;
  const int64_t* layout = &headers[static_cast<size_t>(reference) * kHeaderWords];
  for (int q = 0; q < n; ++q)
    if (rank_rows[static_cast<size_t>(q)] > 0)
      check(std::memcmp(layout, &headers[static_cast<size_t>(q) * kHeaderWords], kHeaderWords * sizeof(int64_t)) == 0,
            "shards: rank ", q, "'s forward gave outputs of another layout than rank ", reference, "'s");

  const int64_t begin = shard_ranges[static_cast<size_t>(first_)].first;
  const int64_t end = begin + rank_rows[static_cast<size_t>(world_->rank())];
  std::vector<Tensor> result;
  for (int64_t k = 0; k < layout[0]; ++k) {
    const Tensor mine =
        local.empty() ? empty_output(layout, k, 0, device) : rows_of(local[static_cast<size_t>(k)]).to(device);
    const Tensor gathered = all_gather_rows(*world_, mine, rank_rows);
    if (local.empty() || !local[static_cast<size_t>(k)][0].requires_grad()) {
      result.push_back(gathered);
      continue;
    }
    // The same values, with this rank's rows as its leaves so the losses' gradients reach them.
    std::vector<Tensor> pieces;
    if (begin > 0) pieces.push_back(slice(gathered, 0, 0, begin));
    for (const Tensor& leaf : local[static_cast<size_t>(k)]) pieces.push_back(leaf);
    if (end < rows) pieces.push_back(slice(gathered, 0, end, rows));
    result.push_back(concat(pieces, 0));
  }
  return result;
}

std::vector<Tensor> Shards::forward_local_shard(const Tensor& input, const MultiForward& fn, int64_t shard) {
  const bool mine = shard >= first_ && shard < last_;
  std::vector<Tensor> outputs;
  if (mine) outputs = cut(shard, fn(input), input.size(0));
  if (ranks() == 1) return outputs;
  // The owner's outputs to every rank (each holds the same input): their layout, then their bytes.
  const int owner = static_cast<int>(shard / (*count_ / ranks()));
  std::vector<int64_t> header = mine ? layout_header(outputs) : std::vector<int64_t>(kHeaderWords, -1);
  world_->broadcast(header.data(), kHeaderWords * sizeof(int64_t), owner);
  for (int64_t k = 0; k < header[0]; ++k) {
    Tensor data = mine ? outputs[static_cast<size_t>(k)].detach()
                       : empty_output(header.data(), k, input.size(0), input.device());
    broadcast_tensor(*world_, data, owner);
    if (!mine) outputs.push_back(data);
  }
  return outputs;
}

Tensor Shards::forward(const Tensor& input, const std::function<Tensor(const Tensor& rows)>& fn, int64_t blocks) {
  return forward(input, [&fn](const Tensor& rows) { return std::vector<Tensor>{fn(rows)}; }, blocks)[0];
}

void Shards::backward(const Tensor& loss, const std::vector<Tensor>& parameters) {
  if (!count_) {
    loss.backward();
    return;
  }
  for (const Tensor& p : parameters)
    check(!p.grad().defined(), "shards: backward expects parameters without gradients (zero_grad first), got ", p);
  loss.backward();
  for (const Tensor& p : parameters)
    check(!p.grad().defined(), "shards: a loss reached the parameter ", p,
          " outside the sharded forwards, so its gradient would not be summed in shard order");
  // This process's shards, each into fresh gradients: added in shard order as they come in one
  // process; kept for the all-gather across processes.
  std::vector<Tensor> sums(parameters.size());
  std::vector<std::vector<Tensor>> local;  // [shard - first_][parameter], undefined where none flowed
  for (int64_t s = first_; s < last_; ++s) {
    std::vector<Tensor> roots, grads;
    for (const Piece& piece : pieces_) {
      if (piece.shard != s) continue;
      for (size_t k = 0; k < piece.leaves.size(); ++k) {
        const Tensor grad = piece.leaves[k].grad();
        if (!grad.defined()) continue;  // an output the losses did not use
        roots.push_back(piece.outputs[k]);
        grads.push_back(grad);
      }
    }
    std::vector<Tensor> shard_grads(parameters.size());
    if (!roots.empty()) {
      run_backward(roots, grads, false);
      for (size_t i = 0; i < parameters.size(); ++i) {
        shard_grads[i] = parameters[i].grad();
        Tensor(parameters[i]).zero_grad();
      }
    }
    if (ranks() > 1) {
      local.push_back(std::move(shard_grads));
      continue;
    }
    for (size_t i = 0; i < parameters.size(); ++i)
      if (shard_grads[i].defined()) add_in_order(sums[i], shard_grads[i]);
  }
  pieces_.clear();
  if (ranks() > 1) sum_gathered_gradients(parameters, local, sums);
  for (size_t i = 0; i < parameters.size(); ++i)
    if (sums[i].defined()) Tensor(parameters[i]).set_grad(sums[i]);
}

void Shards::sum_gathered_gradients(const std::vector<Tensor>& parameters,
                                    const std::vector<std::vector<Tensor>>& local, std::vector<Tensor>& sums) {
  if (parameters.empty()) return;
  const int n = ranks();
  const size_t num_params = parameters.size();
  const int64_t per_rank = *count_ / n;
  // A shard's gradients as one row, every parameter's values in order (zeros where none flowed), so
  // that one all-gather moves every shard's; a flag per (shard, parameter) says which flowed.
  int64_t row_length = 0;
  for (const Tensor& p : parameters) {
    check(p.dtype() == parameters[0].dtype(), "shards: the parameters must share one dtype, got ", parameters[0],
          " and ", p);
    row_length += p.numel();
  }
  NoGradGuard no_grad;
  std::vector<char> flags, all_flags(static_cast<size_t>(*count_) * num_params);
  std::vector<Tensor> rows;
  for (const std::vector<Tensor>& shard : local) {
    std::vector<Tensor> parts;
    for (size_t i = 0; i < num_params; ++i) {
      const Tensor& p = parameters[i];
      const Tensor& grad = shard[i];
      check(!grad.defined() || (grad.dtype() == p.dtype() && grad.shape() == p.shape()), "shards: the gradient ", grad,
            " does not match its parameter ", p);
      flags.push_back(grad.defined() ? 1 : 0);
      parts.push_back(grad.defined() ? reshape(grad.detach(), {p.numel()}) : zeros({p.numel()}, p.dtype(), p.device()));
    }
    rows.push_back(reshape(concat(parts, 0), {1, row_length}));
  }
  world_->all_gather(flags.data(), flags.size(), all_flags.data(),
                     std::vector<size_t>(static_cast<size_t>(n), static_cast<size_t>(per_rank) * num_params));
  const Tensor all = all_gather_rows(*world_, concat(rows, 0), std::vector<int64_t>(static_cast<size_t>(n), per_rank));
  for (int64_t s = 0; s < *count_; ++s) {
    const Tensor row = reshape(slice(all, 0, s, s + 1), {row_length});
    int64_t offset = 0;
    for (size_t i = 0; i < num_params; ++i) {
      const Tensor& p = parameters[i];
      if (all_flags[static_cast<size_t>(s) * num_params + i]) {
        const Tensor grad = reshape(slice(row, 0, offset, offset + p.numel()), p.shape());
        add_in_order(sums[i], sums[i].defined() ? grad : grad.clone());  // a whole tensor, not a view of `all`
      }
      offset += p.numel();
    }
  }
}

}  // namespace mcdl
