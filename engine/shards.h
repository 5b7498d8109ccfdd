// Exact batch sharding (--shards S): the per-sample part of a training step (the model's forward
// and backward) runs on S contiguous shards of the batch's images, one after the other, while the
// losses see the whole batch's outputs, so every batch statistic stays global.
//
// A forward through Shards cuts its input into the shards, runs the model on each, and cuts the
// graph at each shard's outputs: the whole-batch outputs are built from detached copies that
// are leaves of their own (the loss's graph ends there). backward() then runs the loss's graph
// down to those leaves, and each shard's graph from its leaves' gradients into fresh parameter
// gradients, and sums the shards' gradients in shard order. What a shard computes depends only
// on its rows and S, so a process that runs some of the shards computes them bit for bit as one
// process that runs all of them; S = 1, 2 and 4 differ only by rounding.
//
// Across processes (a Collective of N ranks, N dividing S), rank r runs shards [r·S/N, (r+1)·S/N)
// and receives the other shards' outputs by all-gather; every rank then computes the same losses
// on the same whole-batch outputs, and the shards' gradients are all-gathered and summed in shard
// order on every rank, so every rank (and one process with the same S) holds the same bits.
//
// Off (the default), a forward runs the model on the whole input and backward() is the loss's
// own: one graph end to end, as without this class.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "engine/collective.h"
#include "engine/tensor.h"

namespace mcdl {

class Shards {
 public:
  // The shard count, or nullopt: off; the processes that share the shards (null: this one alone;
  // more than one needs a count that their number divides).
  explicit Shards(std::optional<int64_t> count = std::nullopt, Collective* world = nullptr);

  int64_t count() const { return count_.value_or(1); }

  // [begin, end) of each shard over `rows` rows: contiguous, the first rows % S shards one row
  // longer (empty shards when rows < S).
  static std::vector<std::pair<int64_t, int64_t>> ranges(int64_t rows, int64_t count);

  // fn over the rows of `input` [n, ...]: its outputs over all n rows, each [n, ...]. With a graph
  // (grad mode on and an output that requires grad), each shard's outputs are kept for backward().
  // `blocks`: the input is that many blocks of rows for the same n/blocks images (views stacked,
  // as [weak1; weak2]); the shards are cut over the images, shard s taking its images' rows from
  // every block, so that a process reads only the rows of its own images (own_positions).
  using MultiForward = std::function<std::vector<Tensor>(const Tensor& rows)>;
  std::vector<Tensor> forward(const Tensor& input, const MultiForward& fn, int64_t blocks = 1);
  Tensor forward(const Tensor& input, const std::function<Tensor(const Tensor& rows)>& fn, int64_t blocks = 1);

  // The images [begin, end) of a batch of `images` whose rows this process's forwards read: its
  // shards' images (with local batch statistics, the images of the shards it owns); all of them
  // in one process. A process may leave the other images' rows unprepared (the loader does).
  std::pair<int64_t, int64_t> own_positions(int64_t images) const;
  // Rows `rows` of `input` [images, ...] in the order asked, the same on every process, where each
  // process holds only the rows of its own_positions: each row comes from the process that holds
  // it (an all-gather). In one process, or with a local shard set (whose owner holds its rows),
  // just the rows.
  Tensor rows_everywhere(const Tensor& input, const std::vector<int64_t>& rows) const;

  // Local batch statistics: until the next call, a forward takes its whole input as the rows of
  // shard `shard` (nullopt: back to cutting inputs into shards). The process that owns the shard
  // computes it; across processes the others receive its outputs (broadcast).
  void set_local_shard(std::optional<int64_t> shard);

  // Gradients of `loss` into the parameters' .grad (which must have none yet): the loss's graph,
  // then shard by shard the graphs of the forwards since the last backward(). The losses may
  // reach the parameters only through those forwards (checked).
  void backward(const Tensor& loss, const std::vector<Tensor>& parameters);

 private:
  struct Piece {
    int64_t shard;
    std::vector<Tensor> outputs, leaves;  // a shard's outputs with their graphs, and the leaves cut from them
  };
  int ranks() const { return world_ ? world_->size() : 1; }
  // Rank q's images of a batch of `images`.
  std::pair<int64_t, int64_t> positions_of_rank(int q, int64_t images) const;
  // A shard's outputs for the losses: each that has a graph replaced by a leaf cut from it (the
  // pair kept for backward()), after checking that each has `rows` rows.
  std::vector<Tensor> cut(int64_t shard, const std::vector<Tensor>& outputs, int64_t rows);
  // The whole input's outputs from this rank's shards' outputs ([output][shard]) and the other
  // ranks' (all-gathered, without a graph).
  std::vector<Tensor> gather_outputs(const std::vector<std::vector<Tensor>>& local, int64_t rows, Device device,
                                     const std::vector<std::pair<int64_t, int64_t>>& shard_ranges);
  // Shard `shard`'s outputs on every rank, computed by its owner.
  std::vector<Tensor> forward_local_shard(const Tensor& input, const MultiForward& fn, int64_t shard);
  // Every shard's gradients from every rank, summed in shard order into `sums`.
  void sum_gathered_gradients(const std::vector<Tensor>& parameters, const std::vector<std::vector<Tensor>>& local,
                              std::vector<Tensor>& sums);

  std::optional<int64_t> count_;
  Collective* world_ = nullptr;
  int64_t first_ = 0, last_ = 0;  // the shards this process runs: [first_, last_)
  std::optional<int64_t> local_shard_;
  std::vector<Piece> pieces_;     // since the last backward(), in the order they ran
};

}  // namespace mcdl
