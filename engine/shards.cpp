#include "engine/shards.h"

#include <cstring>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/ops.h"

namespace mcdl {
namespace {

// What a rank says of a forward's outputs before they are gathered: their number, then per
// output its dtype, rank and trailing sizes (a rank without rows has none to say).
constexpr size_t kHeaderWords = 64, kMaxOutputs = 7, kWordsPerOutput = 9;

Tensor host_copy(const Tensor& t) { return t.to(Device::cpu()); }

Tensor tensor_from_bytes(const char* bytes, const Shape& shape, DType dtype, Device device) {
  Tensor host = empty(shape, dtype, Device::cpu());
  if (host.nbytes() > 0) std::memcpy(host.raw_data(), bytes, host.nbytes());
  return host.to(device);
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

std::vector<Tensor> Shards::forward(const Tensor& input, const MultiForward& fn) {
  if (!count_ || input.size(0) == 0) return fn(input);
  if (local_shard_) return forward_local_shard(input, fn, *local_shard_);
  const bool record = grad_enabled();
  std::vector<std::vector<Tensor>> parts;  // [output][shard] of this rank's shards
  const auto shard_ranges = ranges(input.size(0), *count_);
  for (int64_t s = first_; s < last_; ++s) {
    const auto [begin, end] = shard_ranges[static_cast<size_t>(s)];
    if (begin == end) continue;
    const std::vector<Tensor> outputs = fn(slice(input, 0, begin, end));
    if (parts.empty()) parts.resize(outputs.size());
    check(outputs.size() == parts.size(), "shards: the forward gave ", outputs.size(), " outputs on shard ", s, " but ",
          parts.size(), " on the first");
    Piece piece{s, {}, {}};
    for (size_t k = 0; k < outputs.size(); ++k) {
      const Tensor& out = outputs[k];
      check(out.dim() >= 1 && out.size(0) == end - begin, "shards: output ", k, " of the forward is ", out, " for ",
            end - begin, " input rows; a sharded forward must give one row per input row");
      if (record && out.requires_grad()) {
        Tensor leaf = out.detach();
        leaf.set_requires_grad(true);
        piece.outputs.push_back(out);
        piece.leaves.push_back(leaf);
        parts[k].push_back(leaf);
      } else {
        parts[k].push_back(out);
      }
    }
    if (!piece.outputs.empty()) pieces_.push_back(std::move(piece));
  }
  if (ranks() > 1) return gather_outputs(parts, input.size(0), input.device(), shard_ranges);
  std::vector<Tensor> result;
  for (const auto& part : parts) result.push_back(part.size() == 1 ? part[0] : concat(part, 0));
  return result;
}

std::vector<Tensor> Shards::gather_outputs(const std::vector<std::vector<Tensor>>& local, int64_t rows, Device device,
                                           const std::vector<std::pair<int64_t, int64_t>>& shard_ranges) {
  const int n = ranks();
  const int64_t per_rank = *count_ / n;
  std::vector<int64_t> rank_begin(static_cast<size_t>(n)), rank_rows(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) {
    const size_t first = static_cast<size_t>(q * per_rank), last = static_cast<size_t>((q + 1) * per_rank - 1);
    rank_begin[static_cast<size_t>(q)] = shard_ranges[first].first;
    rank_rows[static_cast<size_t>(q)] = shard_ranges[last].second - shard_ranges[first].first;
  }
  // The outputs' layout, from the first rank that has rows.
  std::vector<int64_t> header(kHeaderWords, -1);
  if (!local.empty()) {
    check(local.size() <= kMaxOutputs, "shards: at most ", kMaxOutputs, " outputs per forward, got ", local.size());
    header[0] = static_cast<int64_t>(local.size());
    for (size_t k = 0; k < local.size(); ++k) {
      const Tensor& t = local[k][0];
      check(static_cast<size_t>(t.dim()) <= kWordsPerOutput - 2, "shards: output ", k, " has too many axes: ", t);
      int64_t* words = &header[1 + k * kWordsPerOutput];
      words[0] = static_cast<int64_t>(t.dtype());
      words[1] = t.dim();
      for (int64_t a = 1; a < t.dim(); ++a) words[1 + a] = t.size(a);
    }
  }
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

  const int rank = world_->rank();
  std::vector<Tensor> result;
  for (int64_t k = 0; k < layout[0]; ++k) {
    const int64_t* words = &layout[1 + k * kWordsPerOutput];
    const DType dtype = static_cast<DType>(words[0]);
    Shape shape{rows};
    int64_t row_elements = 1;
    for (int64_t a = 1; a < words[1]; ++a) {
      shape.push_back(words[1 + a]);
      row_elements *= words[1 + a];
    }
    const size_t row_bytes = static_cast<size_t>(row_elements) * dtype_size(dtype);
    std::vector<size_t> counts;
    for (int q = 0; q < n; ++q) counts.push_back(static_cast<size_t>(rank_rows[static_cast<size_t>(q)]) * row_bytes);
    Tensor mine;
    if (!local.empty()) {
      NoGradGuard no_grad;
      mine = host_copy(local[static_cast<size_t>(k)].size() == 1 ? local[static_cast<size_t>(k)][0].detach()
                                                                 : concat(local[static_cast<size_t>(k)], 0));
    }
    Tensor gathered = empty(shape, dtype, Device::cpu());
    world_->all_gather(mine.defined() ? mine.raw_data() : nullptr, counts[static_cast<size_t>(rank)],
                       gathered.raw_data(), counts);
    gathered = gathered.to(device);
    const bool has_graph = !local.empty() && local[static_cast<size_t>(k)][0].requires_grad();
    if (!has_graph) {
      result.push_back(gathered);
      continue;
    }
    // The same values, with this rank's rows as its leaves so the losses' gradients reach them.
    const int64_t begin = rank_begin[static_cast<size_t>(rank)], end = begin + rank_rows[static_cast<size_t>(rank)];
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
  if (mine) {
    const bool record = grad_enabled();
    Piece piece{shard, {}, {}};
    for (const Tensor& out : fn(input)) {
      check(out.dim() >= 1 && out.size(0) == input.size(0), "shards: an output of the forward is ", out, " for ",
            input.size(0), " input rows; a sharded forward must give one row per input row");
      if (record && out.requires_grad()) {
        Tensor leaf = out.detach();
        leaf.set_requires_grad(true);
        piece.outputs.push_back(out);
        piece.leaves.push_back(leaf);
        outputs.push_back(leaf);
      } else {
        outputs.push_back(out);
      }
    }
    if (!piece.outputs.empty()) pieces_.push_back(std::move(piece));
  }
  if (ranks() == 1) return outputs;
  // The owner's outputs to every rank: their layout, then their bytes.
  const int owner = static_cast<int>(shard / (*count_ / ranks()));
  std::vector<int64_t> header(kHeaderWords, -1);
  if (mine) {
    check(outputs.size() <= kMaxOutputs, "shards: at most ", kMaxOutputs, " outputs per forward, got ", outputs.size());
    header[0] = static_cast<int64_t>(outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      check(static_cast<size_t>(outputs[k].dim()) <= kWordsPerOutput - 2, "shards: output ", k,
            " has too many axes: ", outputs[k]);
      int64_t* words = &header[1 + k * kWordsPerOutput];
      words[0] = static_cast<int64_t>(outputs[k].dtype());
      words[1] = outputs[k].dim();
      for (int64_t a = 0; a < outputs[k].dim(); ++a) words[2 + a] = outputs[k].size(a);
    }
  }
  world_->broadcast(header.data(), kHeaderWords * sizeof(int64_t), owner);
  for (int64_t k = 0; k < header[0]; ++k) {
    const int64_t* words = &header[1 + k * kWordsPerOutput];
    if (mine) {
      NoGradGuard no_grad;
      Tensor host = host_copy(outputs[static_cast<size_t>(k)].detach());
      world_->broadcast(host.raw_data(), host.nbytes(), owner);
      continue;
    }
    Shape shape(words + 2, words + 2 + words[1]);
    Tensor host = empty(shape, static_cast<DType>(words[0]), Device::cpu());
    world_->broadcast(host.raw_data(), host.nbytes(), owner);
    outputs.push_back(host.to(input.device()));
  }
  return outputs;
}

Tensor Shards::forward(const Tensor& input, const std::function<Tensor(const Tensor& rows)>& fn) {
  return forward(input, [&fn](const Tensor& rows) { return std::vector<Tensor>{fn(rows)}; })[0];
}

void Shards::backward(const Tensor& loss, const std::vector<Tensor>& parameters) {
  for (const Tensor& p : parameters)
    check(!p.grad().defined(), "shards: backward expects parameters without gradients (zero_grad first), got ", p);
  loss.backward();
  if (!count_) return;
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
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (!shard_grads[i].defined()) continue;
      if (sums[i].defined()) {
        accumulate_into(sums[i], shard_grads[i], GradMode::Accumulate);
      } else {
        sums[i] = shard_grads[i];
      }
    }
  }
  pieces_.clear();
  if (ranks() > 1) sum_gathered_gradients(parameters, local, sums);
  for (size_t i = 0; i < parameters.size(); ++i)
    if (sums[i].defined()) Tensor(parameters[i]).set_grad(sums[i]);
}

void Shards::sum_gathered_gradients(const std::vector<Tensor>& parameters,
                                    const std::vector<std::vector<Tensor>>& local, std::vector<Tensor>& sums) {
  // A shard's message: one flag byte per parameter (1: a gradient follows), then each parameter's
  // gradient bytes (zeros where the flag is 0), so every shard's message has the same length.
  size_t shard_bytes = parameters.size();
  for (const Tensor& p : parameters) shard_bytes += p.nbytes();
  std::vector<char> send(shard_bytes * local.size(), 0);
  for (size_t s = 0; s < local.size(); ++s) {
    char* message = &send[s * shard_bytes];
    char* bytes = message + parameters.size();
    for (size_t i = 0; i < parameters.size(); ++i) {
      const Tensor& grad = local[s][i];
      if (grad.defined()) {
        check(grad.dtype() == parameters[i].dtype() && grad.shape() == parameters[i].shape(), "shards: the gradient ",
              grad, " does not match its parameter ", parameters[i]);
        message[i] = 1;
        const Tensor host = host_copy(grad);
        std::memcpy(bytes, host.raw_data(), host.nbytes());
      }
      bytes += parameters[i].nbytes();
    }
  }
  const int n = ranks();
  std::vector<char> all(shard_bytes * static_cast<size_t>(*count_));
  world_->all_gather(send.data(), send.size(), all.data(),
                     std::vector<size_t>(static_cast<size_t>(n), shard_bytes * static_cast<size_t>(*count_ / n)));
  for (int64_t s = 0; s < *count_; ++s) {
    const char* message = &all[static_cast<size_t>(s) * shard_bytes];
    const char* bytes = message + parameters.size();
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (message[i]) {
        const Tensor grad =
            tensor_from_bytes(bytes, parameters[i].shape(), parameters[i].dtype(), parameters[i].device());
        if (sums[i].defined()) {
          accumulate_into(sums[i], grad, GradMode::Accumulate);
        } else {
          sums[i] = grad;
        }
      }
      bytes += parameters[i].nbytes();
    }
  }
}

}  // namespace mcdl
