// The optimizer base: named parameters in groups, each group with its own learning rate and
// weight decay (e.g. a "decay" group for weights and a "no_decay" group for biases and norm
// scales), and the per-parameter state as named tensors ("<slot>.<parameter name>") that a
// checkpoint can save and load.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

struct NamedParameter {
  std::string name;
  Tensor tensor;
};

struct ParamGroup {
  std::string name;  // for messages
  std::vector<NamedParameter> params;
  double lr = 0.0;
  double weight_decay = 0.0;
};

using StateDict = std::map<std::string, Tensor>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a .grad; parameters without one are skipped
  // (PyTorch). Runs under NoGradGuard and writes the parameters' data in place.
  virtual void step() = 0;
  // Drops every parameter's .grad (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  const std::vector<ParamGroup>& groups() const { return groups_; }
  void set_lr(double lr);                      // every group
  void set_group_lr(size_t group, double lr);  // one group

  // The live state: "<slot>.<parameter name>" → tensor. A parameter's slots appear at its
  // first update.
  const StateDict& state() const { return state_; }
  // Copies of the state, for a checkpoint.
  StateDict state_dict() const;
  // Replaces the state with copies of `state` after checking every name, dtype and shape: each
  // entry must be a known slot of a known parameter, and a parameter has all slots or none.
  void load_state_dict(const StateDict& state);

 protected:
  // A per-parameter state slot: a tensor like the parameter, or an f64 scalar (a counter).
  struct StateSlot {
    std::string prefix;
    bool scalar;
  };

  Optimizer(std::string name, std::vector<ParamGroup> groups);
  virtual std::vector<StateSlot> state_slots() const = 0;
  // The state tensor "<prefix>.<parameter name>"; `created` is set when it did not exist and
  // was made now (zeros like the parameter, or an f64 scalar 0 for a scalar slot).
  Tensor& state_tensor(const std::string& prefix, const NamedParameter& param, bool scalar, bool& created);

 private:
  std::string name_;
  std::vector<ParamGroup> groups_;
  StateDict state_;
};

}  // namespace mcdl
