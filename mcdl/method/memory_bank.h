// MCDL's memory bank (docs/method.md §3): per unlabelled training sample, a ring of its last μ
// predictions (the argmax class and the probability vector) on the training device, from which
// the dual-consistency credibility modelling reads each sample's most frequent class, how
// often it occurs, and the mean prediction.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "engine/ops/indexing.h"  // HostIndex
#include "engine/ops/method.h"    // BankRings, Consistency
#include "engine/tensor.h"

namespace mcdl {

class MemoryBank {
 public:
  // Empty rings for samples 0..num_samples-1 (the sample's position in the unlabelled set).
  MemoryBank(int64_t num_samples, int64_t num_classes, int64_t mu = 16, Device device = Device::cpu());

  int64_t num_samples() const { return num_samples_; }
  int64_t num_classes() const { return num_classes_; }
  int64_t mu() const { return mu_; }
  Device device() const { return device_; }

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

  // The whole state for a checkpoint: "classes" i32 [N, μ], "probs" f32 [N, μ, K],
  // "position" i64 [N] (the next slot written), "filled" i64 [N]. The tensors are the bank's
  // own buffers (not copies); save them before the next update.
  std::map<std::string, Tensor> state() const;
  // Replaces the state with a copy of `state` (exactly those four names, the shapes and dtypes
  // above, positions in [0, μ), fills in [0, μ] with position == filled while a ring is not
  // full, classes of filled entries in [0, K)); throws without changing the bank otherwise.
  void load_state(const std::map<std::string, Tensor>& state);

 private:
  void check_samples(const char* op, const Tensor& sample_index) const;
  void check_samples(const char* op, const HostIndex& sample_index) const;
  void write(const Tensor& sample_index, const Tensor& probs);

  int64_t num_samples_, num_classes_, mu_;
  Device device_;
  BankRings rings_;
};

}  // namespace mcdl
