#include "mcdl/method/memory_bank.h"

#include <vector>

#include "engine/dispatch.h"
#include "engine/ops.h"
#include "engine/ops/indexing.h"

namespace mcdl {
namespace {

const char* const state_names[] = {"classes", "filled", "position", "probs"};

}  // namespace

MemoryBank::MemoryBank(int64_t num_samples, int64_t num_classes, int64_t mu, Device device)
    : num_samples_(num_samples), num_classes_(num_classes), mu_(mu), device_(device) {
  check(num_samples >= 0 && num_classes > 0 && mu > 0, "MemoryBank: expected num_samples >= 0, num_classes > 0 and ",
        "mu > 0, got ", num_samples, ", ", num_classes, ", ", mu);
  rings_.classes = zeros({num_samples, mu}, DType::i32, device);
  rings_.probs = zeros({num_samples, mu, num_classes}, DType::f32, device);
  rings_.position = zeros({num_samples}, DType::i64, device);
  rings_.filled = zeros({num_samples}, DType::i64, device);
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
  write(sample_index, probs);
}

void MemoryBank::update(const HostIndex& sample_index, const Tensor& probs) {
  check_samples("MemoryBank.update", sample_index);
  write(sample_index.tensor(), probs);
}

Consistency MemoryBank::consistency(const HostIndex& sample_index) const {
  check_samples("MemoryBank.consistency", sample_index);
  return bank_consistency(rings_, sample_index.tensor());
}

Tensor MemoryBank::mean_probs(const HostIndex& sample_index) const {
  check_samples("MemoryBank.mean_probs", sample_index);
  return bank_mean_probs(rings_, sample_index.tensor());
}

void MemoryBank::write(const Tensor& sample_index, const Tensor& probs) {
  check(probs.defined() && probs.dim() == 2 && probs.size(0) == sample_index.numel() &&
            probs.size(1) == num_classes_ && probs.device() == device_,
        "MemoryBank.update: probs must be [", sample_index.numel(), ", ", num_classes_, "] on ", device_,
        ", got ", probs);
  check_floating("MemoryBank.update", probs);
  bank_update(rings_, sample_index, probs.detach().to(DType::f32));
}

Consistency MemoryBank::consistency(const Tensor& sample_index) const {
  check_samples("MemoryBank.consistency", sample_index);
  return bank_consistency(rings_, sample_index);
}

Tensor MemoryBank::mean_probs(const Tensor& sample_index) const {
  check_samples("MemoryBank.mean_probs", sample_index);
  return bank_mean_probs(rings_, sample_index);
}

std::map<std::string, Tensor> MemoryBank::state() const {
  return {{"classes", rings_.classes}, {"filled", rings_.filled}, {"position", rings_.position},
          {"probs", rings_.probs}};
}

void MemoryBank::load_state(const std::map<std::string, Tensor>& state) {
  const char* op = "MemoryBank.load_state";
  check(state.size() == std::size(state_names), op, ": expected exactly the tensors classes, filled, position and ",
        "probs, got ", state.size(), " tensors");
  for (const char* name : state_names)
    check(state.count(name) && state.at(name).defined(), op, ": missing tensor '", name, "'");
  const auto expect = [&](const char* name, DType dtype, const Shape& shape) {
    const Tensor& t = state.at(name);
    check(t.dtype() == dtype && t.shape() == shape, op, ": '", name, "' must be ", dtype_name(dtype),
          shape_str(shape), ", got ", t.str());
  };
  expect("classes", DType::i32, {num_samples_, mu_});
  expect("probs", DType::f32, {num_samples_, mu_, num_classes_});
  expect("position", DType::i64, {num_samples_});
  expect("filled", DType::i64, {num_samples_});
  const std::vector<int32_t> classes = state.at("classes").to_vector<int32_t>();
  const std::vector<int64_t> position = state.at("position").to_vector<int64_t>();
  const std::vector<int64_t> filled = state.at("filled").to_vector<int64_t>();
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
    const Tensor& t = state.at(name);
    return t.device() == device_ ? t.clone() : t.detach().to(device_);
  };
  rings_.classes = own_copy("classes");
  rings_.probs = own_copy("probs");
  rings_.position = own_copy("position");
  rings_.filled = own_copy("filled");
}

}  // namespace mcdl
