#include "layers/dino_checkpoint.h"

#include <array>
#include <cstring>
#include <optional>
#include <sstream>

#include "engine/ops/shape.h"
#include "io/file_handle.h"
#include "io/hex_bytes.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "layers/vision_transformer.h"

namespace mcdl {

namespace {

constexpr const char* kStrippedPrefixes[] = {"module.", "backbone.", "vit."};

template <class... Parts>
[[noreturn]] void bad(const Parts&... parts) {
  fail("dino checkpoint: ", parts...);
}

std::string describe_config(const VitConfig& c) {
  std::ostringstream os;
  os << "img " << c.img_size << ", patch " << c.patch_size << ", chans " << c.in_chans << ", dim " << c.embed_dim
     << ", depth " << c.depth << ", heads " << c.num_heads << ", mlp " << c.mlp_hidden_dim()
     << (c.qkv_bias ? ", qkv bias" : ", no qkv bias");
  if (c.layer_scale) os << ", layer scale";
  if (c.num_registers > 0) os << ", " << c.num_registers << " registers";
  if (c.pos_img_size > 0) os << ", pos_embed " << c.pos_grid_size() << "x" << c.pos_grid_size();
  return os.str();
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// "encoder.layer.<N>.<rest>" -> (N, rest).
std::optional<std::pair<std::string, std::string>> split_hf_layer(const std::string& key) {
  constexpr std::string_view kLayer = "encoder.layer.";
  if (!starts_with(key, kLayer)) return std::nullopt;
  const size_t dot = key.find('.', kLayer.size());
  if (dot == std::string::npos || dot == kLayer.size()) return std::nullopt;
  const std::string index = key.substr(kLayer.size(), dot - kLayer.size());
  for (char c : index) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::make_pair(index, key.substr(dot + 1));
}

// "<module>.weight" / "<module>.bias" -> (module, "weight" / "bias").
std::optional<std::pair<std::string, std::string>> split_param(const std::string& key) {
  for (const char* param : {"weight", "bias"}) {
    const std::string suffix = std::string(".") + param;
    if (key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return std::make_pair(key.substr(0, key.size() - suffix.size()), std::string(param));
    }
  }
  return std::nullopt;
}

// The DINO name of a Hugging Face ViTModel key; qkv_part = 0/1/2 for query/key/value (whose
// DINO name is the fused attn.qkv tensor), -1 otherwise. nullopt when not a ViTModel name.
std::optional<std::string> dino_name_of_hf(const std::string& key, int& qkv_part) {
  qkv_part = -1;
  static const std::pair<const char*, const char*> kTop[] = {
      {"embeddings.cls_token", "cls_token"},
      {"embeddings.position_embeddings", "pos_embed"},
      {"embeddings.register_tokens", "register_tokens"},
      {"embeddings.patch_embeddings.projection.weight", "patch_embed.proj.weight"},
      {"embeddings.patch_embeddings.projection.bias", "patch_embed.proj.bias"},
      {"layernorm.weight", "norm.weight"},
      {"layernorm.bias", "norm.bias"},
  };
  for (const auto& [hf, dino] : kTop) {
    if (key == hf) return dino;
  }
  const auto layer = split_hf_layer(key);
  if (!layer) return std::nullopt;
  const std::string block = "blocks." + layer->first + ".";
  // Dinov2Model's LayerScale gains.
  if (layer->second == "layer_scale1.lambda1") return block + "ls1.gamma";
  if (layer->second == "layer_scale2.lambda1") return block + "ls2.gamma";
  const auto param = split_param(layer->second);
  if (!param) return std::nullopt;
  // ViTModel's names, then Dinov2Model's (whose norm1 / norm2 / mlp.fc1 / mlp.fc2 are DINO's).
  static const std::pair<const char*, const char*> kModules[] = {
      {"layernorm_before", "norm1"},
      {"layernorm_after", "norm2"},
      {"attention.output.dense", "attn.proj"},
      {"intermediate.dense", "mlp.fc1"},
      {"output.dense", "mlp.fc2"},
      {"norm1", "norm1"},
      {"norm2", "norm2"},
      {"mlp.fc1", "mlp.fc1"},
      {"mlp.fc2", "mlp.fc2"},
  };
  for (const auto& [hf, dino] : kModules) {
    if (param->first == hf) return block + dino + "." + param->second;
  }
  static const char* kQkv[] = {"attention.attention.query", "attention.attention.key", "attention.attention.value"};
  for (int part = 0; part < 3; ++part) {
    if (param->first == kQkv[part]) {
      qkv_part = part;
      return block + "attn.qkv." + param->second;
    }
  }
  return std::nullopt;
}

// A DINO ViT parameter name for some configuration: what a wrong configuration would miss.
bool is_dino_vit_name(const std::string& name) {
  for (const char* top : {"cls_token", "pos_embed", "register_tokens", "patch_embed.proj.weight",
                          "patch_embed.proj.bias", "norm.weight", "norm.bias"}) {
    if (name == top) return true;
  }
  if (!starts_with(name, "blocks.")) return false;
  const size_t dot = name.find('.', 7);
  if (dot == std::string::npos || dot == 7) return false;
  for (size_t i = 7; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  const std::string rest = name.substr(dot + 1);
  if (rest == "ls1.gamma" || rest == "ls2.gamma") return true;
  const auto param = split_param(rest);
  if (!param) return false;
  for (const char* module : {"norm1", "attn.qkv", "attn.proj", "norm2", "mlp.fc1", "mlp.fc2"}) {
    if (param->first == module) return true;
  }
  return false;
}

// DINOv2's chunked blocks (training checkpoints with block_chunks > 0): "blocks.<chunk>.<i>.<rest>"
// -> "blocks.<i>.<rest>" (i counts over all blocks; the chunk index only groups them).
std::optional<std::string> unchunked(const std::string& name) {
  if (!starts_with(name, "blocks.")) return std::nullopt;
  auto digits_until_dot = [&](size_t from) -> size_t {
    size_t at = from;
    while (at < name.size() && name[at] >= '0' && name[at] <= '9') ++at;
    return at > from && at < name.size() && name[at] == '.' ? at : std::string::npos;
  };
  const size_t chunk_end = digits_until_dot(7);
  if (chunk_end == std::string::npos) return std::nullopt;
  const size_t index_end = digits_until_dot(chunk_end + 1);
  if (index_end == std::string::npos) return std::nullopt;
  return "blocks." + name.substr(chunk_end + 1);
}

// DINOv2's mask token (official and Hugging Face names): used by its masked-image pretraining
// only, never by the features, so it is dropped by name.
bool is_mask_token(const std::string& name) { return name == "mask_token" || name == "embeddings.mask_token"; }

struct Source {
  std::string key;  // as in the checkpoint
  Tensor tensor;
};

std::string tensor_desc(const Tensor& t) { return std::string(dtype_name(t.dtype())) + shape_str(t.shape()); }

}  // namespace

CheckpointTensors read_checkpoint_tensors(const std::string& path) {
  const std::vector<uint8_t> head = read_file_head(path, 9);
  if (head.empty()) bad(path, ": the file is empty; expected a PyTorch checkpoint (.pth) or a safetensors file");
  const bool torch = looks_like_torch_checkpoint(head);
  if (!torch && !looks_like_safetensors(head)) {
    bad(path, ": neither a PyTorch checkpoint (torch.save's zip or legacy format) nor a safetensors file (it starts ",
        hex_bytes(head), "); expected e.g. DINO's dino_vitbase16_pretrain.pth or a Hugging Face model.safetensors");
  }
  CheckpointTensors result;
  if (torch) {
    TorchCheckpoint checkpoint = load_torch_checkpoint(path);
    result.tensors = std::move(checkpoint.tensors);
    result.format = checkpoint.format;
    result.notes = std::move(checkpoint.notes);
  } else {
    result.tensors = load_safetensors(path).tensors;
    result.format = "safetensors";
  }
  return result;
}

BackboneConversion convert_dino_backbone(const std::map<std::string, Tensor>& source, const VitConfig& config) {
  config.validate();
  BackboneConversion out;
  std::map<std::string, Shape> expected;
  for (NamedParameter& p : VisionTransformer(config).named_parameters()) expected.emplace(p.name, p.tensor.shape());

  std::map<std::string, int64_t> stripped;  // prefix -> keys
  int64_t heads = 0, poolers = 0, hf_names = 0, chunked = 0;
  std::vector<std::string> mask_tokens;                             // "'key' dtype[shape]" of each dropped mask token
  std::map<std::string, Source> renamed;                            // DINO name -> source
  std::map<std::string, std::array<std::optional<Source>, 3>> qkv;  // fused name -> query/key/value
  auto unknown = [&](const Source& s) {
    out.warnings.push_back("ignored unknown tensor '" + s.key + "' " + tensor_desc(s.tensor) +
                           " (not a DINO ViT backbone parameter)");
  };

  for (const auto& [key, tensor] : source) {
    std::string name = key, prefix;
    for (bool again = true; again;) {
      again = false;
      for (const char* p : kStrippedPrefixes) {
        if (starts_with(name, p)) {
          prefix += p;
          name.erase(0, std::strlen(p));
          again = true;
        }
      }
    }
    if (!prefix.empty()) ++stripped[prefix];
    if (starts_with(name, "head.")) {
      ++heads;
      continue;
    }
    if (starts_with(name, "pooler.")) {
      ++poolers;
      continue;
    }
    if (is_mask_token(name)) {
      mask_tokens.push_back("'" + key + "' " + tensor_desc(tensor));
      continue;
    }
    if (auto flat = unchunked(name)) {
      ++chunked;
      name = *flat;
    }
    Source s{key, tensor};
    int part = -1;
    if (auto dino = dino_name_of_hf(name, part)) {
      ++hf_names;
      name = *dino;
    }
    if (part >= 0) {
      qkv[name][static_cast<size_t>(part)] = std::move(s);
      continue;
    }
    if (!expected.count(name)) {
      if (is_dino_vit_name(name)) {
        bad("'", key, "' is a DINO ViT parameter that the configuration (", describe_config(config),
            ") does not have: wrong --config?");
      }
      unknown(s);
      continue;
    }
    auto [it, inserted] = renamed.emplace(name, s);
    if (!inserted) bad("'", it->second.key, "' and '", key, "' both map to '", name, "'");
  }

  // Hugging Face's separate query / key / value -> DINO's fused qkv (rows Q, K, V).
  static const char* kPartNames[] = {"query", "key", "value"};
  for (auto& [name, parts] : qkv) {
    auto shape_it = expected.find(name);
    if (shape_it == expected.end()) {
      for (const auto& part : parts) {
        if (part)
          bad("'", part->key, "' is a ViT parameter that the configuration (", describe_config(config),
              ") does not have: wrong --config?");
      }
      continue;
    }
    Shape part_shape = shape_it->second;
    part_shape[0] /= 3;
    std::vector<Tensor> pieces;
    for (size_t i = 0; i < 3; ++i) {
      if (!parts[i]) {
        bad("missing the ", kPartNames[i], " part of '", name,
            "' (Hugging Face names need query, key and value; found ",
            (parts[0]   ? parts[0]->key
             : parts[1] ? parts[1]->key
                        : parts[2]->key),
            ")");
      }
      if (parts[i]->tensor.shape() != part_shape) {
        bad("'", parts[i]->key, "' has shape ", shape_str(parts[i]->tensor.shape()), " but the configuration (",
            describe_config(config), ") expects ", shape_str(part_shape));
      }
      if (!is_floating(parts[i]->tensor.dtype())) {
        bad("'", parts[i]->key, "' is ", tensor_desc(parts[i]->tensor), ", not a floating-point tensor");
      }
      pieces.push_back(parts[i]->tensor.to(DType::f32));
    }
    renamed.emplace(name, Source{parts[0]->key + " (+ key, value)", concat(pieces, 0)});
  }

  std::vector<std::string> missing;
  std::map<std::string, int64_t> converted;  // source dtype -> tensors converted to f32
  for (const auto& [name, shape] : expected) {
    auto it = renamed.find(name);
    if (it == renamed.end()) {
      missing.push_back("'" + name + "' " + shape_str(shape));
      continue;
    }
    const Tensor& t = it->second.tensor;
    const std::string from = it->second.key == name ? "" : " (from '" + it->second.key + "')";
    if (t.shape() != shape) {
      bad("'", name, "'", from, " has shape ", shape_str(t.shape()), " but the configuration (",
          describe_config(config), ") expects ", shape_str(shape));
    }
    if (!is_floating(t.dtype())) bad("'", name, "'", from, " is ", tensor_desc(t), ", not a floating-point tensor");
    if (t.dtype() != DType::f32) ++converted[dtype_name(t.dtype())];
    out.tensors.emplace(name, t.dtype() == DType::f32 ? t : t.to(DType::f32));
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", " : "") + missing[i];
    bad("missing ", missing.size(), " tensor(s) of the configuration (", describe_config(config), "): ", list,
        missing.size() > 5 ? ", ..." : "");
  }

  for (const auto& [prefix, count] : stripped) {
    out.notes.push_back("stripped the prefix '" + prefix + "' from " + std::to_string(count) + " keys");
  }
  if (heads > 0) {
    out.notes.push_back("dropped " + std::to_string(heads) +
                        " projection-head tensors (head.*): the output is the backbone only");
  }
  if (poolers > 0)
    out.notes.push_back("dropped " + std::to_string(poolers) + " Hugging Face pooler tensors (pooler.*)");
  for (const std::string& mask : mask_tokens)
    out.notes.push_back("dropped the mask token " + mask +
                        " (DINOv2's masked-image pretraining; not used by features)");
  if (chunked > 0)
    out.notes.push_back("read " + std::to_string(chunked) +
                        " tensors of chunked blocks (blocks.<chunk>.<i>. as blocks.<i>.)");
  if (hf_names > 0 && config.layer_scale) {
    out.notes.push_back("mapped " + std::to_string(hf_names) +
                        " Hugging Face Dinov2Model names to DINOv2's (query/key/value fused into attn.qkv, "
                        "layer_scale1/2.lambda1 as ls1/ls2.gamma)");
  } else if (hf_names > 0) {
    std::ostringstream eps;
    eps << config.norm_eps;
    out.notes.push_back("mapped " + std::to_string(hf_names) +
                        " Hugging Face ViTModel names to DINO's (query/key/value fused into attn.qkv); LayerNorm eps "
                        "stays the configuration's " +
                        eps.str() + ", as in DINO/GCD/SimGCD (Hugging Face says 1e-12)");
  }
  for (const auto& [dtype, count] : converted) {
    out.notes.push_back("converted " + std::to_string(count) + " tensors from " + dtype + " to f32");
  }
  return out;
}

void save_dino_backbone(const std::string& path, const BackboneConversion& converted, const VitConfig& config) {
  ModelConfig model;
  model.backbone = config;
  save_safetensors(path, converted.tensors, {{"config", model_config_to_json(model)}});
}

}  // namespace mcdl
