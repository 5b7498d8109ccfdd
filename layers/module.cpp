#include "layers/module.h"

#include <set>
#include <sstream>

#include "engine/random.h"

namespace mcdl {
namespace {

// The new handle takes the old one's requires_grad flag (a fresh tensor is a leaf).
void replace_keeping_flag(Tensor& parameter, Tensor replacement) {
  const bool requires_grad = parameter.requires_grad();
  parameter = std::move(replacement);
  parameter.set_requires_grad(requires_grad);
}

Tensor draw(const std::string& name, const Tensor& like, const ParamInit& init, uint64_t seed) {
  RandomStream stream(seed, stream_id(name));
  switch (init.kind) {
    case ParamInit::Kind::constant:
      return full(like.shape(), init.value, like.dtype(), like.device());
    case ParamInit::Kind::trunc_normal:
      return rand_trunc_normal(like.shape(), like.dtype(), stream, 0.0, init.value, -2.0, 2.0, like.device());
    case ParamInit::Kind::uniform:
      return rand_uniform(like.shape(), like.dtype(), stream, -init.value, init.value, like.device());
  }
  fail("initialize: unknown init kind for ", name);
}

std::string join(const std::vector<std::string>& names, size_t limit = 8) {
  std::ostringstream os;
  for (size_t i = 0; i < names.size() && i < limit; ++i) os << (i ? ", " : "") << names[i];
  if (names.size() > limit) os << ", ... (" << names.size() << " in all)";
  return os.str();
}

}  // namespace

std::vector<NamedParameter> Module::named_parameters() {
  std::vector<NamedParameter> out;
  visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit&) { out.push_back({name, p}); });
  return out;
}

std::vector<NamedParameter> Module::trainable_parameters() {
  std::vector<NamedParameter> out;
  visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit&) {
    if (p.requires_grad()) out.push_back({name, p});
  });
  return out;
}

int64_t Module::parameter_count() {
  int64_t count = 0;
  visit_parameters("", [&](const std::string&, Tensor& p, const ParamInit&) { count += p.numel(); });
  return count;
}

bool Module::any_trainable() {
  bool any = false;
  visit_parameters("", [&](const std::string&, Tensor& p, const ParamInit&) { any = any || p.requires_grad(); });
  return any;
}

void Module::set_requires_grad(bool on) {
  visit_parameters("", [&](const std::string&, Tensor& p, const ParamInit&) { p.set_requires_grad(on); });
}

void Module::initialize(uint64_t seed) {
  visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit& init) {
    replace_keeping_flag(p, draw(name, p, init, seed));
  });
}

void Module::to(Device device) {
  visit_parameters("", [&](const std::string&, Tensor& p, const ParamInit&) {
    if (p.device() != device) replace_keeping_flag(p, p.detach().to(device));
    p.zero_grad();
  });
}

void Module::to(DType dtype) {
  visit_parameters("", [&](const std::string&, Tensor& p, const ParamInit&) {
    if (p.dtype() != dtype) replace_keeping_flag(p, p.detach().to(dtype));
    p.zero_grad();
  });
}

void Module::zero_grad() {
  visit_parameters("", [](const std::string&, Tensor& p, const ParamInit&) { p.zero_grad(); });
}

std::map<std::string, Tensor> Module::state_dict() {
  std::map<std::string, Tensor> out;
  visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit&) { out[name] = p.clone(); });
  return out;
}

void Module::load_parameters(const std::map<std::string, Tensor>& tensors) {
  std::vector<std::string> missing, unexpected;
  std::set<std::string> known;
  visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit&) {
    known.insert(name);
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      missing.push_back(name);
      return;
    }
    check(it->second.shape() == p.shape(), "load_parameters: ", name, " has shape ", shape_str(it->second.shape()),
          " in the weights but ", shape_str(p.shape()), " in the model");
  });
  for (const auto& [name, tensor] : tensors)
    if (!known.count(name)) unexpected.push_back(name);
  check(missing.empty(), "load_parameters: missing ", missing.size(), " parameter(s): ", join(missing));
  check(unexpected.empty(), "load_parameters: ", unexpected.size(), " unexpected key(s): ", join(unexpected));
  visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit&) {
    const Tensor& source = tensors.at(name);
    Tensor value = source.detach().to(p.dtype()).to(p.device());
    if (value.storage() == source.storage()) value = value.clone();  // never alias the caller's tensors
    replace_keeping_flag(p, value);
  });
}

Tensor new_parameter(const Shape& shape) { return empty(shape).set_requires_grad(true); }

}  // namespace mcdl
