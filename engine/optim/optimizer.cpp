#include "engine/optim/optimizer.h"

#include <cmath>
#include <set>

namespace mcdl {
namespace {

void check_group_hyperparameters(const std::string& optimizer, const ParamGroup& group) {
  check(std::isfinite(group.lr) && group.lr >= 0, optimizer, ": group '", group.name,
        "' needs a finite learning rate >= 0, got ", group.lr);
  check(std::isfinite(group.weight_decay) && group.weight_decay >= 0, optimizer, ": group '", group.name,
        "' needs a finite weight decay >= 0, got ", group.weight_decay);
}

}  // namespace

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups)
    : name_(std::move(name)), groups_(std::move(groups)) {
  check(!groups_.empty(), name_, ": no parameter groups given");
  std::set<std::string> names;
  std::set<const TensorImpl*> tensors;
  for (const ParamGroup& group : groups_) {
    check_group_hyperparameters(name_, group);
    for (const NamedParameter& p : group.params) {
      check(!p.name.empty(), name_, ": a parameter in group '", group.name, "' has an empty name");
      check(p.tensor.defined(), name_, ": parameter '", p.name, "' is an undefined tensor");
      check(p.tensor.dtype() == DType::f32 || p.tensor.dtype() == DType::f64, name_, ": parameter '", p.name,
            "' must be f32 or f64, got ", p.tensor.str());
      check(p.tensor.is_leaf(), name_, ": parameter '", p.name, "' ", p.tensor.str(),
            " is not a leaf (it has a grad_fn); optimize the leaf tensor");
      check(names.insert(p.name).second, name_, ": parameter name '", p.name, "' appears more than once");
      check(tensors.insert(p.tensor.impl()).second, name_, ": parameter '", p.name,
            "' is the same tensor as an earlier parameter (each tensor belongs to one group)");
    }
  }
}

void Optimizer::zero_grad() {
  for (ParamGroup& group : groups_)
    for (NamedParameter& p : group.params) p.tensor.zero_grad();
}

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < groups_.size(); ++g) set_group_lr(g, lr);
}

void Optimizer::set_group_lr(size_t group, double lr) {
  check(group < groups_.size(), name_, ": set_group_lr: group ", group, " is out of range for ", groups_.size(),
        " groups");
  check(std::isfinite(lr) && lr >= 0, name_, ": set_group_lr: learning rate must be finite and >= 0, got ", lr);
  groups_[group].lr = lr;
}

StateDict Optimizer::state_dict() const {
  StateDict copy;
  for (const auto& [key, tensor] : state_) copy.emplace(key, tensor.clone());
  return copy;
}

void Optimizer::load_state_dict(const StateDict& state) {
  const std::string op = name_ + ".load_state_dict";
  const std::vector<StateSlot> slots = state_slots();
  std::map<std::string, const Tensor*> params;
  for (const ParamGroup& group : groups_)
    for (const NamedParameter& p : group.params) params.emplace(p.name, &p.tensor);

  std::map<std::string, size_t> slots_per_param;
  std::map<std::string, Device> target_device;
  for (const auto& [key, tensor] : state) {
    // Slot prefixes have no '.', parameter names may ("layer1.weight").
    const size_t dot = key.find('.');
    const std::string prefix = key.substr(0, dot), param_name = dot == std::string::npos ? "" : key.substr(dot + 1);
    const StateSlot* slot = nullptr;
    for (const StateSlot& s : slots)
      if (s.prefix == prefix) slot = &s;
    check(slot != nullptr, op, ": unknown state entry '", key, "'");
    const auto param = params.find(param_name);
    check(param != params.end(), op, ": state entry '", key, "' names no parameter of this optimizer");
    check(tensor.defined(), op, ": state entry '", key, "' is an undefined tensor");
    const Tensor& p = *param->second;
    const bool fits = slot->scalar ? tensor.dtype() == DType::f64 && tensor.numel() == 1 && tensor.dim() == 0
                                   : tensor.shape() == p.shape() && tensor.dtype() == p.dtype();
    check(fits, op, ": state entry '", key, "' is ", tensor.str(), " but expected ",
          slot->scalar ? "f64[] " + p.device().str() : p.str(), " for parameter '", param_name, "'");
    ++slots_per_param[param_name];
    target_device.emplace(key, p.device());
  }
  for (const auto& [param_name, count] : slots_per_param) {
    check(count == slots.size(), op, ": parameter '", param_name, "' has ", count, " of its ", slots.size(),
          " state entries; a parameter needs all of them or none");
  }
  // Entries may come from any device and are copied to their parameter's (PyTorch moves loaded
  // state likewise), so a checkpoint read on the host resumes a CUDA run.
  state_.clear();
  for (const auto& [key, tensor] : state) {
    const Device device = target_device.at(key);
    state_.emplace(key, tensor.device() == device ? tensor.clone() : tensor.to(device));
  }
}

Tensor& Optimizer::state_tensor(const std::string& prefix, const NamedParameter& param, bool scalar, bool& created) {
  const std::string key = prefix + "." + param.name;
  auto it = state_.find(key);
  created = it == state_.end();
  if (created) {
    Tensor fresh = scalar ? scalar_tensor(0.0, DType::f64, param.tensor.device())
                          : zeros(param.tensor.shape(), param.tensor.dtype(), param.tensor.device());
    it = state_.emplace(key, fresh).first;
  }
  return it->second;
}

}  // namespace mcdl
