// The base of every layer: a module owns named parameter tensors and lists them, with the
// rule that initialises each, in one fixed order. Everything that treats parameters as a set
// (listing, moving to a device, loading weights, initialising, freezing) goes through that
// listing, so a layer only has to name its tensors once, in visit_parameters().
//
// Names are PyTorch state-dict names: a parent passes its prefix ("blocks.3.") and the
// child appends its own path ("attn.qkv.weight"). The scheme of the whole model is
// documented in layers/vision_transformer.h and layers/simgcd_model.h.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/optim/optimizer.h"
#include "engine/tensor.h"

namespace mcdl {

// How a parameter is drawn by Module::initialize (the rules of DINO, SimGCD and PyTorch).
struct ParamInit {
  enum class Kind {
    constant,      // every element = value
    trunc_normal,  // N(0, value²) cut to [−2, 2] (absolute bounds: timm's trunc_normal_(std=value))
    uniform,       // U(−value, value): PyTorch's default Linear / Conv2d init with value = 1/√fan_in
  };
  Kind kind = Kind::constant;
  double value = 0.0;

  static ParamInit constant(double v) { return {Kind::constant, v}; }
  static ParamInit trunc_normal(double std) { return {Kind::trunc_normal, std}; }
  static ParamInit uniform(double bound) { return {Kind::uniform, bound}; }
};

// The callback of visit_parameters: the full name, the parameter handle (replaceable: to() and
// load_parameters() assign a new tensor), and how it is initialised.
using ParameterVisitor = std::function<void(const std::string& name, Tensor& parameter, const ParamInit& init)>;

class Module {
 public:
  virtual ~Module() = default;

  // Calls `visit` for every parameter, in the module's fixed order, names prefixed by `prefix`.
  virtual void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) = 0;

  // (name, handle) for every parameter in the fixed order; the handles share the module's
  // tensors (an optimizer updates them in place).
  std::vector<NamedParameter> named_parameters();
  // The subset with requires_grad set, in the same order: what an optimizer gets.
  std::vector<NamedParameter> trainable_parameters();
  int64_t parameter_count();  // elements over all parameters
  bool any_trainable();       // true when some parameter has requires_grad set
  // Sets requires_grad on every parameter.
  void set_requires_grad(bool on);

  // Draws every parameter by its ParamInit, each from its own stream
  // RandomStream(seed, stream_id(name)): a parameter's values depend only on (seed, name).
  void initialize(uint64_t seed);

  // Moves (or converts) every parameter, keeping its requires_grad flag; gradients are dropped.
  // Replaces the handles: build optimizers after moving.
  void to(Device device);
  void to(DType dtype);

  // Drops every parameter's .grad.
  void zero_grad();

  // Copies of the parameters, by name (for saving a file).
  std::map<std::string, Tensor> state_dict();

  // Replaces every parameter's values with tensors[name], converted to the parameter's dtype
  // and device, keeping requires_grad. Every parameter must be present with its exact shape;
  // a key that names no parameter is an error too (strip or drop extra keys first). The
  // message names the missing / unexpected keys or the shape mismatch.
  void load_parameters(const std::map<std::string, Tensor>& tensors);

 protected:
  Module() = default;
  Module(const Module&) = default;
  Module(Module&&) = default;
  Module& operator=(const Module&) = default;
  Module& operator=(Module&&) = default;
};

// A parameter of the given shape on the CPU (f32), allocated but not initialised, with
// requires_grad set (PyTorch's nn.Parameter default).
Tensor new_parameter(const Shape& shape);

}  // namespace mcdl
