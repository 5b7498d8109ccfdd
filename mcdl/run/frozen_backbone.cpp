#include "mcdl/run/frozen_backbone.h"

#include <cstdint>
#include <cstdio>
#include <set>

#include "engine/byte_hash.h"
#include "engine/error.h"

namespace mcdl {
namespace {

// The names of the backbone's parameters that do not train (state_dict's copies carry no flag).
std::set<std::string> frozen_names(VisionTransformer& backbone) {
  std::set<std::string> names;
  backbone.visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit&) {
    if (!p.requires_grad()) names.insert(name);
  });
  return names;
}

}  // namespace

std::string frozen_fingerprint(VisionTransformer& backbone) {
  uint64_t h = kByteHashStart;
  backbone.visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit&) {
    if (p.requires_grad()) return;
    const Tensor host = p.to(Device::cpu());
    const std::string header = name + ":" + host.str();
    hash_bytes(h, header.data(), header.size());
    hash_bytes(h, host.raw_data(), host.nbytes());
  });
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::map<std::string, Tensor> trainable_state(Module& model, VisionTransformer& backbone) {
  const std::set<std::string> frozen = frozen_names(backbone);
  std::map<std::string, Tensor> state;
  model.visit_parameters("", [&](const std::string& name, Tensor& p, const ParamInit&) {
    if (!frozen.count(name)) state.emplace(name, p.clone());
  });
  return state;
}

void load_trainable_state(Module& model, VisionTransformer& backbone, const std::map<std::string, Tensor>& saved,
                          const SafetensorsFile& file, const std::string& path, const std::string& built_fingerprint,
                          const std::string& source) {
  const auto recorded = file.metadata.find(frozen_backbone_key);
  if (recorded == file.metadata.end()) {
    model.load_parameters(saved);
    return;
  }
  check(recorded->second == built_fingerprint, "checkpoint ", path, " was trained on other frozen backbone ",
        "weights than the ones rebuilt from ", source, " (fingerprint ", built_fingerprint, ", the checkpoint's ",
        recorded->second, "): the checkpoint leaves the frozen blocks out, so pass the --weights file the run ",
        "started from");
  std::map<std::string, Tensor> all = model.state_dict();
  for (const auto& [name, tensor] : trainable_state(model, backbone))
    check(saved.count(name), "checkpoint ", path, " has no '", name, "' (a trained parameter): not written by ",
          "this run's method?");
  for (const auto& [name, tensor] : saved) all[name] = tensor;
  model.load_parameters(all);
}

std::string frozen_source(const TrainConfig& config) {
  return config.weights.empty() ? "--model " + config.model + " --seed " + std::to_string(config.seed)
                                : "--weights " + config.weights;
}

}  // namespace mcdl
