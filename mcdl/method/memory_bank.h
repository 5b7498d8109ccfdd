// MCDL's memory bank (docs/method.md §3): per unlabelled training sample, a ring of its last μ
// predictions (the argmax class and the probability vector) on the training device, from which
// the dual-consistency credibility modelling reads each sample's most frequent class, how
// often it occurs, and the mean prediction.
//
// Across processes (a world of N > 1 ranks) each rank keeps the rings of its own block of samples
// only (Shards::ranges(num_samples, N): contiguous, in rank order), so a process holds 1/N of the
// bank. Updates write the rows of a rank's own samples; queries compute them there and gather the
// rows back into query order on every rank: the same values as one bank, whatever N. Every rank
// must then make the same calls with the same arguments (the training loop does).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/all_gather.h"  // RowBlocks
#include "engine/collective.h"
#include "engine/ops/indexing.h"  // HostIndex
#include "engine/ops/method.h"    // BankRings, Consistency
#include "engine/tensor.h"
#include "io/safetensors.h"  // StoredTensor

namespace mcdl {

class MemoryBank {
 public:
  // Empty rings for samples 0..num_samples-1 (the sample's position in the unlabelled set).
  // With `world` (null: this process alone) of N > 1 ranks, this rank's rings are those of its
  // own block of samples.
  MemoryBank(int64_t num_samples, int64_t num_classes, int64_t mu = 16, Device device = Device::cpu(),
             Collective* world = nullptr);

  int64_t num_samples() const { return num_samples_; }
  int64_t num_classes() const { return num_classes_; }
  int64_t mu() const { return mu_; }
  Device device() const { return device_; }
  // The samples whose rings this process holds: [first, end).
  std::pair<int64_t, int64_t> own_samples() const { return {begin_, end_}; }

  // Writes row i of probs [n, K] (f32 or f64, stored as f32; no gradient is kept) into the ring
  // of sample_index[i] (i64 [n], on the bank's device), rows in batch order: a sample drawn
  // twice in a batch gets two entries, the later row the more recent.
  void update(const Tensor& sample_index, const Tensor& probs);

  Consistency consistency(const Tensor& sample_index) const;

  // The mean of each queried sample's filled entries: f32 [n, K] (zeros for an empty ring).
  Tensor mean_probs(const Tensor& sample_index) const;

  // The same on positions made on the host (a batch's slots): checked there, with no device-side
  // check to read back.
  void update(const HostIndex& sample_index, const Tensor& probs);
  Consistency consistency(const HostIndex& sample_index) const;
  Tensor mean_probs(const HostIndex& sample_index) const;

  // How many entries each sample's ring holds (all samples, on the host).
  std::vector<int64_t> filled() const;
  // Each sample's latest entry: its argmax class and largest probability (−1 and NaN for an empty
  // ring), all samples, on the host.
  struct Latest {
    std::vector<int64_t> classes;
    std::vector<float> confidence;
  };
  Latest latest() const;

  // The state for a checkpoint: "classes" i32 [N, μ], "probs" f32 [N, μ, K], "position" i64 [N]
  // (the next slot written), "filled" i64 [N], each as the rows this process holds (all of them in
  // one process), on the bank's device. They are the bank's own buffers, not copies: copy them
  // before the next update (mcdl/run/checkpoint_writer.h does).
  std::map<std::string, RowBlocks> state() const;
  // Replaces the state with a copy of `state` (the whole bank, on every rank: each keeps its own
  // block; exactly those four names, the shapes and dtypes
  // above, positions in [0, μ), fills in [0, μ] with position == filled while a ring is not
  // full, classes of filled entries in [0, K)); throws without changing the bank otherwise.
  // Any of the four may be in `stored` instead (left in the checkpoint's file): of "probs", the
  // largest by far (123 GB for both banks at ImageNet-1K size), a rank then reads only its rows.
  void load_state(const std::map<std::string, Tensor>& state, const std::map<std::string, StoredTensor>& stored = {});

 private:
  // A query across processes: which of its positions this rank answers (and at which of its own
  // rings), how many each rank answers, and where each position's row lands in the rank-order
  // gather of the answers.
  struct Split {
    std::vector<int64_t> own_positions, own_rings, rows_per_rank, gathered_row;
  };
  bool sharded() const { return world_ != nullptr; }
  Split split(const std::vector<int64_t>& samples) const;
  // Every rank's answers (`own`, this rank's, [own rows, ...] on the device) in query order.
  Tensor gather_answers(const Split& split, const Tensor& own) const;
  // Every rank's rows of a per-sample tensor of its rings, in sample order, on every rank (on the
  // device of `own`).
  Tensor gather_samples(const Tensor& own) const;
  HostIndex host_index(const Tensor& sample_index) const;
  void check_samples(const char* op, const Tensor& sample_index) const;
  void check_samples(const char* op, const HostIndex& sample_index) const;
  void check_probs(int64_t rows, const Tensor& probs) const;
  void write_own(const HostIndex& sample_index, const Tensor& probs);

  int64_t num_samples_, num_classes_, mu_;
  Device device_;
  Collective* world_ = nullptr;  // set only for more than one rank
  std::vector<std::pair<int64_t, int64_t>> blocks_;  // each rank's samples
  int64_t begin_ = 0, end_ = 0;
  BankRings rings_;  // the rings of samples [begin_, end_)
};

}  // namespace mcdl
