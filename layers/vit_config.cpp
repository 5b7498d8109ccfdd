#include "layers/vit_config.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "engine/error.h"

namespace mcdl {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Value parsers for spec items: false when the text is not a complete, valid value
// (parse_count: a positive integer, or also 0 with allow_zero).
bool parse_count(const std::string& text, int64_t& out, bool allow_zero = false) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && (out > 0 || (allow_zero && out == 0));
}
bool parse_positive_double(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(out) && out > 0;
}
bool parse_bool(const std::string& text, bool& out) {
  if (text == "true" || text == "1") return out = true, true;
  if (text == "false" || text == "0") return out = false, true;
  return false;
}

// A spec key: what it sets, and what its value must be (for the error message).
struct SpecKey {
  const char* expected;
  std::function<bool(const std::string&, ModelConfig&)> set;
};

SpecKey int_key(int64_t VitConfig::*field) {
  return {"a positive integer",
          [field](const std::string& v, ModelConfig& c) { return parse_count(v, c.backbone.*field); }};
}
SpecKey head_int_key(int64_t HeadConfig::*field, bool allow_zero) {
  return {
      allow_zero ? "a non-negative integer" : "a positive integer",
      [field, allow_zero](const std::string& v, ModelConfig& c) { return parse_count(v, c.head.*field, allow_zero); }};
}

const std::map<std::string, SpecKey>& spec_keys() {
  static const std::map<std::string, SpecKey> keys = {
      {"img", int_key(&VitConfig::img_size)},
      {"patch", int_key(&VitConfig::patch_size)},
      {"chans", int_key(&VitConfig::in_chans)},
      {"dim", int_key(&VitConfig::embed_dim)},
      {"depth", int_key(&VitConfig::depth)},
      {"heads", int_key(&VitConfig::num_heads)},
      {"mlp_ratio",
       {"a positive number",
        [](const std::string& v, ModelConfig& c) { return parse_positive_double(v, c.backbone.mlp_ratio); }}},
      {"qkv_bias",
       {"true or false", [](const std::string& v, ModelConfig& c) { return parse_bool(v, c.backbone.qkv_bias); }}},
      {"eps",
       {"a positive number",
        [](const std::string& v, ModelConfig& c) { return parse_positive_double(v, c.backbone.norm_eps); }}},
      {"layer_scale",
       {"true or false", [](const std::string& v, ModelConfig& c) { return parse_bool(v, c.backbone.layer_scale); }}},
      {"registers",
       {"a non-negative integer",
        [](const std::string& v, ModelConfig& c) { return parse_count(v, c.backbone.num_registers, true); }}},
      {"pos_img",
       {"a non-negative integer (0 = img)",
        [](const std::string& v, ModelConfig& c) { return parse_count(v, c.backbone.pos_img_size, true); }}},
      {"classes", head_int_key(&HeadConfig::num_classes, true)},
      {"head_hidden", head_int_key(&HeadConfig::hidden_dim, false)},
      {"head_bottleneck", head_int_key(&HeadConfig::bottleneck_dim, false)},
  };
  return keys;
}

std::vector<std::string> spec_key_names() {
  std::vector<std::string> names;
  for (const auto& [name, key] : spec_keys()) names.push_back(name);
  return names;
}

ModelConfig named_config(const std::string& name, const std::string& spec) {
  if (name == "vit_base_patch16") return ModelConfig{vit_base_patch16(), HeadConfig{}};
  static const std::tuple<const char*, int64_t, int64_t> kDinov2[] = {{"vit_small_patch14_dinov2", 384, 6},
                                                                      {"vit_base_patch14_dinov2", 768, 12}};
  for (const auto& [base, dim, heads] : kDinov2) {
    if (name == base) return ModelConfig{vit_dinov2(dim, heads, 0), HeadConfig{}};
    if (name == std::string(base) + "_reg4") return ModelConfig{vit_dinov2(dim, heads, 4), HeadConfig{}};
  }
  fail("config '", spec, "': unknown configuration name '", name, "' (known: ", join(model_config_names()),
       "; other items must be key=value)");
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.push_back("");
  return parts;
}

// ---- JSON -----------------------------------------------------------------------------------
using nlohmann::json;

const std::vector<std::string> backbone_fields = {"img_size",  "patch_size", "in_chans", "embed_dim", "depth",
                                                  "num_heads", "mlp_ratio",  "qkv_bias", "norm_eps"};
// The DINOv2 fields: optional, absent = the default (see the header).
const std::vector<std::string> optional_backbone_fields = {"layer_scale", "num_registers", "pos_img_size"};
const std::vector<std::string> head_fields = {"hidden_dim", "bottleneck_dim", "num_classes"};

// Every required field present and no field outside required + optional.
void check_fields(const json& object, const std::string& where, const std::vector<std::string>& fields,
                  const std::vector<std::string>& optional = {}) {
  check(object.is_object(), "model config JSON: ", where, " must be an object, got ", object.dump());
  for (const std::string& f : fields)
    check(object.contains(f), "model config JSON: ", where, " has no field '", f, "'");
  std::vector<std::string> all = fields;
  all.insert(all.end(), optional.begin(), optional.end());
  for (const auto& item : object.items()) {
    bool known = false;
    for (const std::string& f : all) known = known || f == item.key();
    check(known, "model config JSON: ", where, " has an unknown field '", item.key(), "' (known: ", join(all), ")");
  }
}

template <class T>
T get(const json& object, const std::string& where, const std::string& field) {
  const json& value = object.at(field);
  if constexpr (std::is_same_v<T, bool>) {
    check(value.is_boolean(), "model config JSON: ", where, ".", field, " must be true or false, got ", value.dump());
  } else if constexpr (std::is_integral_v<T>) {
    check(value.is_number_integer(), "model config JSON: ", where, ".", field, " must be an integer, got ",
          value.dump());
  } else {
    check(value.is_number(), "model config JSON: ", where, ".", field, " must be a number, got ", value.dump());
  }
  return value.get<T>();
}

}  // namespace

void VitConfig::validate() const {
  check(img_size > 0 && patch_size > 0 && in_chans > 0 && embed_dim > 0 && depth > 0 && num_heads > 0,
        "vit config: sizes must be positive (img ", img_size, ", patch ", patch_size, ", chans ", in_chans, ", dim ",
        embed_dim, ", depth ", depth, ", heads ", num_heads, ")");
  check(img_size % patch_size == 0, "vit config: image size ", img_size, " is not a multiple of the patch size ",
        patch_size);
  check(embed_dim % num_heads == 0, "vit config: dim ", embed_dim, " is not divisible by ", num_heads, " heads");
  check(std::isfinite(mlp_ratio) && mlp_ratio > 0 && mlp_hidden_dim() > 0, "vit config: mlp_ratio ", mlp_ratio,
        " gives no MLP hidden units for dim ", embed_dim);
  check(std::isfinite(norm_eps) && norm_eps > 0, "vit config: LayerNorm eps must be positive, got ", norm_eps);
  check(num_registers >= 0, "vit config: the number of register tokens must be >= 0, got ", num_registers);
  check(pos_img_size >= 0 && pos_img_size % patch_size == 0, "vit config: the position embedding's image size ",
        pos_img_size, " must be 0 (= img) or a multiple of the patch size ", patch_size);
}

void HeadConfig::validate() const {
  check(init_std > 0, "head config: init_std must be positive, got ", init_std);
  check(hidden_dim > 0 && bottleneck_dim > 0 && num_classes >= 0, "head config: hidden ", hidden_dim,
        " and bottleneck ", bottleneck_dim, " must be positive and classes ", num_classes, " non-negative");
}

VitConfig vit_base_patch16() { return VitConfig{}; }

VitConfig vit_dinov2(int64_t embed_dim, int64_t num_heads, int64_t num_registers) {
  VitConfig c;
  c.patch_size = 14;
  c.embed_dim = embed_dim;
  c.num_heads = num_heads;
  c.layer_scale = true;
  c.num_registers = num_registers;
  c.pos_img_size = 518;
  return c;
}

std::vector<std::string> model_config_names() {
  return {"vit_base_patch16", "vit_small_patch14_dinov2", "vit_small_patch14_dinov2_reg4", "vit_base_patch14_dinov2",
          "vit_base_patch14_dinov2_reg4"};
}

ModelConfig parse_model_config(const std::string& spec) {
  check(!spec.empty(), "config: empty configuration (give a name such as vit_base_patch16 or key=value items)");
  const std::vector<std::string> items = split(spec, ',');
  ModelConfig config{vit_base_patch16(), HeadConfig{}};
  std::set<std::string> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      check(i == 0, "config '", spec, "': item '", item, "' is not key=value (only the first item may be a name)");
      config = named_config(item, spec);
      continue;
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    auto it = spec_keys().find(key);
    check(it != spec_keys().end(), "config '", spec, "': unknown key '", key, "' (known keys: ", join(spec_key_names()),
          ")");
    check(seen.insert(key).second, "config '", spec, "': key '", key, "' is given twice");
    check(it->second.set(value, config), "config '", spec, "': bad value '", value, "' for '", key, "' (expected ",
          it->second.expected, ")");
  }
  config.backbone.validate();
  config.head.validate();
  return config;
}

std::string model_config_to_json(const ModelConfig& config) {
  const VitConfig& b = config.backbone;
  json out = {{"architecture", "dino_vit"},
              {"backbone",
               {{"img_size", b.img_size},
                {"patch_size", b.patch_size},
                {"in_chans", b.in_chans},
                {"embed_dim", b.embed_dim},
                {"depth", b.depth},
                {"num_heads", b.num_heads},
                {"mlp_ratio", b.mlp_ratio},
                {"qkv_bias", b.qkv_bias},
                {"norm_eps", b.norm_eps}}}};
  if (b.layer_scale) out["backbone"]["layer_scale"] = true;
  if (b.num_registers != 0) out["backbone"]["num_registers"] = b.num_registers;
  if (b.pos_img_size != 0) out["backbone"]["pos_img_size"] = b.pos_img_size;
  if (config.has_head())
    out["head"] = {{"hidden_dim", config.head.hidden_dim},
                   {"bottleneck_dim", config.head.bottleneck_dim},
                   {"num_classes", config.head.num_classes}};
  return out.dump();
}

ModelConfig model_config_from_json(const std::string& text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    fail("model config JSON: cannot parse: ", e.what());
  }
  check(root.is_object(), "model config JSON: expected an object, got ", root.dump());
  for (const auto& item : root.items())
    check(item.key() == "architecture" || item.key() == "backbone" || item.key() == "head",
          "model config JSON: unknown field '", item.key(), "' (known: architecture, backbone, head)");
  check(root.contains("architecture") && root["architecture"] == "dino_vit",
        "model config JSON: architecture must be \"dino_vit\", got ",
        root.contains("architecture") ? root["architecture"].dump() : std::string("nothing"));
  check(root.contains("backbone"), "model config JSON: no \"backbone\" object");
  const json& b = root["backbone"];
  check_fields(b, "backbone", backbone_fields, optional_backbone_fields);
  ModelConfig config;
  VitConfig& v = config.backbone;
  v.img_size = get<int64_t>(b, "backbone", "img_size");
  v.patch_size = get<int64_t>(b, "backbone", "patch_size");
  v.in_chans = get<int64_t>(b, "backbone", "in_chans");
  v.embed_dim = get<int64_t>(b, "backbone", "embed_dim");
  v.depth = get<int64_t>(b, "backbone", "depth");
  v.num_heads = get<int64_t>(b, "backbone", "num_heads");
  v.mlp_ratio = get<double>(b, "backbone", "mlp_ratio");
  v.qkv_bias = get<bool>(b, "backbone", "qkv_bias");
  v.norm_eps = get<double>(b, "backbone", "norm_eps");
  if (b.contains("layer_scale")) v.layer_scale = get<bool>(b, "backbone", "layer_scale");
  if (b.contains("num_registers")) v.num_registers = get<int64_t>(b, "backbone", "num_registers");
  if (b.contains("pos_img_size")) v.pos_img_size = get<int64_t>(b, "backbone", "pos_img_size");
  v.validate();
  if (root.contains("head")) {
    const json& h = root["head"];
    check_fields(h, "head", head_fields);
    config.head.hidden_dim = get<int64_t>(h, "head", "hidden_dim");
    config.head.bottleneck_dim = get<int64_t>(h, "head", "bottleneck_dim");
    config.head.num_classes = get<int64_t>(h, "head", "num_classes");
    config.head.validate();
  }
  return config;
}

}  // namespace mcdl
