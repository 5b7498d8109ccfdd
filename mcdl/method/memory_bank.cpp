#include "mcdl/method/memory_bank.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

#include "engine/all_gather.h"
#include "engine/dispatch.h"
#include "engine/ops.h"
#include "engine/ops/indexing.h"
#include "engine/shards.h"

namespace mcdl {
namespace {

const char* const state_names[] = {"classes", "filled", "position", "probs"};

}  // namespace

MemoryBank::MemoryBank(int64_t num_samples, int64_t num_classes, int64_t mu, Device device, Collective* world)
    : num_samples_(num_samples), num_classes_(num_classes), mu_(mu), device_(device) {
  check(num_samples >= 0 && num_classes > 0 && mu > 0, "MemoryBank: expected num_samples >= 0, num_classes > 0 and ",
        "mu > 0, got ", num_samples, ", ", num_classes, ", ", mu);
  if (world && world->size() > 1) world_ = world;
  blocks_ = Shards::ranges(num_samples, sharded() ? world_->size() : 1);
  std::tie(begin_, end_) = blocks_[sharded() ? static_cast<size_t>(world_->rank()) : 0];
  const int64_t own = end_ - begin_;
  rings_.classes = zeros({own, mu}, DType::i32, device);
  rings_.probs = zeros({own, mu, num_classes}, DType::f32, device);
  rings_.position = zeros({own}, DType::i64, device);
  rings_.filled = zeros({own}, DType::i64, device);
}

MemoryBank::Split MemoryBank::split(const std::vector<int64_t>& samples) const {
  const size_t ranks = blocks_.size();
  std::vector<size_t> owner(samples.size());
  Split out;
  out.rows_per_rank.assign(ranks, 0);
  for (size_t p = 0; p < samples.size(); ++p) {
    // The last block that starts at or before the sample (empty blocks come only at the end).
    const auto after = std::upper_bound(blocks_.begin(), blocks_.end(), samples[p],
                                        [](int64_t s, const std::pair<int64_t, int64_t>& b) { return s < b.first; });
    owner[p] = static_cast<size_t>(after - blocks_.begin()) - 1;
    ++out.rows_per_rank[owner[p]];
  }
  std::vector<int64_t> next(ranks, 0);  // the next gathered row of each rank's answers
  for (size_t r = 1; r < ranks; ++r) next[r] = next[r - 1] + out.rows_per_rank[r - 1];
  const auto me = static_cast<size_t>(world_->rank());
  out.gathered_row.resize(samples.size());
  for (size_t p = 0; p < samples.size(); ++p) {
    out.gathered_row[p] = next[owner[p]]++;
    if (owner[p] != me) continue;
    out.own_positions.push_back(static_cast<int64_t>(p));
    out.own_rings.push_back(samples[p] - begin_);
  }
  return out;
}

Tensor MemoryBank::gather_answers(const Split& split, const Tensor& own) const {
  const Tensor all = all_gather_rows(*world_, own.to(device_), split.rows_per_rank);
  return index_select(all, HostIndex(split.gathered_row, device_));
}

Tensor MemoryBank::gather_samples(const Tensor& own) const {
  std::vector<int64_t> rows_per_rank;
  for (const auto& [begin, end] : blocks_) rows_per_rank.push_back(end - begin);
  return all_gather_rows(*world_, own, rows_per_rank);
}

HostIndex MemoryBank::host_index(const Tensor& sample_index) const {
  return HostIndex(sample_index.to(Device::cpu()).to_vector<int64_t>(), device_);
}

void MemoryBank::check_samples(const char* op, const Tensor& sample_index) const {
  check(sample_index.defined(), op, ": sample_index is undefined");
  check(sample_index.dtype() == DType::i64 && sample_index.dim() == 1 && sample_index.device() == device_, op,
        ": sample_index must be i64 [n] on ", device_, ", got ", sample_index);
  const int64_t bad = first_invalid_index(sample_index, num_samples_);
  if (bad >= 0)
    fail(op, ": sample index ", view_of(sample_index, {1}, sample_index.storage_offset() + bad).item(),
         " at position ", bad, " is out of range for a bank of ", num_samples_, " samples");
}

void MemoryBank::check_samples(const char* op, const HostIndex& sample_index) const {
  check(sample_index.tensor().device() == device_, op, ": sample_index must be on ", device_, ", got ",
        sample_index.tensor());
  const int64_t bad = sample_index.first_outside(num_samples_);
  if (bad >= 0)
    fail(op, ": sample index ", sample_index.host()[static_cast<size_t>(bad)], " at position ", bad,
         " is out of range for a bank of ", num_samples_, " samples");
}

void MemoryBank::update(const Tensor& sample_index, const Tensor& probs) {
  check_samples("MemoryBank.update", sample_index);
  check_probs(sample_index.numel(), probs);
  if (sharded()) return write_own(host_index(sample_index), probs);
  bank_update(rings_, sample_index, probs.detach().to(DType::f32));
}

void MemoryBank::update(const HostIndex& sample_index, const Tensor& probs) {
  check_samples("MemoryBank.update", sample_index);
  check_probs(sample_index.size(), probs);
  if (sharded()) return write_own(sample_index, probs);
  bank_update(rings_, sample_index.tensor(), probs.detach().to(DType::f32));
}

void MemoryBank::check_probs(int64_t rows, const Tensor& probs) const {
  check(probs.defined() && probs.dim() == 2 && probs.size(0) == rows && probs.size(1) == num_classes_ &&
            probs.device() == device_,
        "MemoryBank.update: probs must be [", rows, ", ", num_classes_, "] on ", device_, ", got ", probs);
  check_floating("MemoryBank.update", probs);
}

// The rows of this rank's samples, in batch order (a sample named twice: the later row the more
// recent), into its rings; the other ranks write the rest.
void MemoryBank::write_own(const HostIndex& sample_index, const Tensor& probs) {
  const Split parts = split(sample_index.host());
  if (parts.own_positions.empty()) return;
  const Tensor rows = index_select(probs.detach(), HostIndex(parts.own_positions, device_));
  bank_update(rings_, HostIndex(parts.own_rings, device_).tensor(), rows.to(DType::f32));
}

Consistency MemoryBank::consistency(const Tensor& sample_index) const {
  check_samples("MemoryBank.consistency", sample_index);
  if (sharded()) return consistency(host_index(sample_index));
  return bank_consistency(rings_, sample_index);
}

Consistency MemoryBank::consistency(const HostIndex& sample_index) const {
  check_samples("MemoryBank.consistency", sample_index);
  if (!sharded()) return bank_consistency(rings_, sample_index.tensor());
  const Split parts = split(sample_index.host());
  const Consistency own = bank_consistency(rings_, HostIndex(parts.own_rings, device_).tensor());
  return {gather_answers(parts, own.mode), gather_answers(parts, own.count)};
}

Tensor MemoryBank::mean_probs(const Tensor& sample_index) const {
  check_samples("MemoryBank.mean_probs", sample_index);
  if (sharded()) return mean_probs(host_index(sample_index));
  return bank_mean_probs(rings_, sample_index);
}

Tensor MemoryBank::mean_probs(const HostIndex& sample_index) const {
  check_samples("MemoryBank.mean_probs", sample_index);
  if (!sharded()) return bank_mean_probs(rings_, sample_index.tensor());
  const Split parts = split(sample_index.host());
  return gather_answers(parts, bank_mean_probs(rings_, HostIndex(parts.own_rings, device_).tensor()));
}

std::vector<int64_t> MemoryBank::filled() const {
  const Tensor all = sharded() ? gather_samples(rings_.filled) : rings_.filled;
  return all.to(Device::cpu()).to_vector<int64_t>();
}

MemoryBank::Latest MemoryBank::latest() const {
  // This rank's samples: the latest entry of each non-empty ring, read on the device.
  const std::vector<int64_t> position = rings_.position.to(Device::cpu()).to_vector<int64_t>();
  const std::vector<int64_t> fill = rings_.filled.to(Device::cpu()).to_vector<int64_t>();
  const int64_t own = end_ - begin_;
  std::vector<int64_t> entries;  // rows of the [own·μ, K] probabilities
  for (int64_t i = 0; i < own; ++i)
    if (fill[static_cast<size_t>(i)] > 0) entries.push_back(i * mu_ + (position[static_cast<size_t>(i)] + mu_ - 1) % mu_);
  Latest latest{std::vector<int64_t>(static_cast<size_t>(own), -1),
                std::vector<float>(static_cast<size_t>(own), std::numeric_limits<float>::quiet_NaN())};
  if (!entries.empty()) {
    const Tensor rows = index_select(reshape(rings_.probs, {own * mu_, num_classes_}), HostIndex(entries, device_));
    const std::vector<int64_t> classes = argmax(rows, 1).to(Device::cpu()).to_vector<int64_t>();
    const std::vector<float> confidence = max(rows, 1).to(Device::cpu()).to(DType::f32).to_vector<float>();
    for (size_t e = 0, i = 0; i < fill.size(); ++i) {
      if (fill[i] == 0) continue;
      latest.classes[i] = classes[e];
      latest.confidence[i] = confidence[e++];
    }
  }
  if (!sharded()) return latest;
  return {gather_samples(from_vector(latest.classes, {own})).to_vector<int64_t>(),
          gather_samples(from_vector(latest.confidence, {own})).to_vector<float>()};
}

std::map<std::string, RowBlocks> MemoryBank::state() const {
  return {{"classes", {rings_.classes, blocks_}},
          {"filled", {rings_.filled, blocks_}},
          {"position", {rings_.position, blocks_}},
          {"probs", {rings_.probs, blocks_}}};
}

void MemoryBank::load_state(const std::map<std::string, Tensor>& state,
                            const std::map<std::string, StoredTensor>& stored) {
  const char* op = "MemoryBank.load_state";
  check(state.size() + stored.size() == std::size(state_names), op,
        ": expected exactly the tensors classes, filled, position and probs, got ", state.size() + stored.size(),
        " tensors");
  for (const char* name : state_names)
    check((state.count(name) && state.at(name).defined()) || stored.count(name), op, ": missing tensor '", name, "'");
  const auto expect = [&](const char* name, DType dtype, const Shape& shape) {
    const auto kept = stored.find(name);
    const DType got_dtype = kept != stored.end() ? kept->second.dtype() : state.at(name).dtype();
    const Shape got_shape = kept != stored.end() ? kept->second.shape() : state.at(name).shape();
    check(got_dtype == dtype && got_shape == shape, op, ": '", name, "' must be ", dtype_name(dtype), shape_str(shape),
          ", got ", dtype_name(got_dtype), shape_str(got_shape));
  };
  // A tensor's rows [begin, end), read from the file where it was left there.
  const auto rows = [&](const char* name, int64_t begin, int64_t end) {
    const auto kept = stored.find(name);
    return kept != stored.end() ? kept->second.rows(begin, end) : slice(state.at(name), 0, begin, end);
  };
  expect("classes", DType::i32, {num_samples_, mu_});
  expect("probs", DType::f32, {num_samples_, mu_, num_classes_});
  expect("position", DType::i64, {num_samples_});
  expect("filled", DType::i64, {num_samples_});
  const std::vector<int32_t> classes = rows("classes", 0, num_samples_).to(Device::cpu()).to_vector<int32_t>();
  const std::vector<int64_t> position = rows("position", 0, num_samples_).to(Device::cpu()).to_vector<int64_t>();
  const std::vector<int64_t> filled = rows("filled", 0, num_samples_).to(Device::cpu()).to_vector<int64_t>();
  for (int64_t s = 0; s < num_samples_; ++s) {
    check(position[s] >= 0 && position[s] < mu_ && filled[s] >= 0 && filled[s] <= mu_, op, ": sample ", s,
          " has position ", position[s], " and filled ", filled[s], " (mu ", mu_, ")");
    check(filled[s] == mu_ || position[s] == filled[s], op, ": sample ", s, " has a ring that is not full (filled ",
          filled[s], ") whose position ", position[s], " is not its fill");
    for (int64_t slot = 0; slot < filled[s]; ++slot) {
      const int32_t c = classes[s * mu_ + slot];
      check(c >= 0 && c < num_classes_, op, ": sample ", s, " slot ", slot, " holds class ", c, ", outside [0, ",
            num_classes_, ")");
    }
  }
  const auto own_copy = [&](const char* name) {
    const Tensor t = rows(name, begin_, end_);
    return t.device() == device_ ? t.clone() : t.detach().to(device_);
  };
  rings_.classes = own_copy("classes");
  rings_.probs = own_copy("probs");
  rings_.position = own_copy("position");
  rings_.filled = own_copy("filled");
}

}  // namespace mcdl
