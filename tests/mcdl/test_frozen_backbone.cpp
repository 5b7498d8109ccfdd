// Checkpoints without the backbone's frozen blocks (mcdl/run/frozen_backbone.h): what they store,
// the fingerprint check, and checkpoints written before that, which hold every parameter.
#include <doctest/doctest.h>

#include "engine/ops.h"
#include "mcdl/run/frozen_backbone.h"

using namespace mcdl;

namespace {

VisionTransformer small_backbone(uint64_t seed) {
  VisionTransformer backbone(parse_model_config("img=16,patch=8,dim=16,depth=2,heads=2").backbone);
  backbone.initialize(seed);
  backbone.set_grad_from_block(1);
  return backbone;
}

bool same_values(VisionTransformer& a, VisionTransformer& b) {
  const auto sa = a.state_dict(), sb = b.state_dict();
  for (const auto& [name, t] : sa)
    if (t.to_vector<float>() != sb.at(name).to_vector<float>()) return false;
  return true;
}

}  // namespace

TEST_CASE("frozen backbone: checkpoints store the trained parameters and a fingerprint of the frozen ones") {
  VisionTransformer trained = small_backbone(1);
  const std::map<std::string, Tensor> saved = trainable_state(trained, trained);
  CHECK(saved.count("blocks.1.attn.qkv.weight") == 1);
  CHECK(saved.count("blocks.0.attn.qkv.weight") == 0);
  CHECK(saved.count("pos_embed") == 0);
  const std::string fingerprint = frozen_fingerprint(trained);
  CHECK(fingerprint.size() == 16);
  CHECK(frozen_fingerprint(trained) == fingerprint);  // a function of the values alone
  SafetensorsFile file{saved, {{frozen_backbone_key, fingerprint}}, {}};
  // Make the trained block differ from a fresh build, so the load is visible.
  for (auto& [name, t] : file.tensors) t = t + 1.0;

  SUBCASE("the same frozen weights: the trained parameters load, the frozen ones stay") {
    VisionTransformer resumed = small_backbone(1);
    load_trainable_state(resumed, resumed, file.tensors, file, "ckpt", frozen_fingerprint(resumed), "--seed 1");
    for (const auto& [name, t] : trainable_state(resumed, resumed))
      CHECK(t.to_vector<float>() == file.tensors.at(name).to_vector<float>());
    CHECK(frozen_fingerprint(resumed) == fingerprint);
  }
  SUBCASE("other frozen weights are refused, naming where they came from") {
    VisionTransformer other = small_backbone(2);
    CHECK_THROWS_WITH(load_trainable_state(other, other, file.tensors, file, "ckpt", frozen_fingerprint(other),
                                           "--model small --seed 2"),
                      doctest::Contains("rebuilt from --model small --seed 2"));
  }
  SUBCASE("a trained parameter missing from the checkpoint is an error") {
    VisionTransformer resumed = small_backbone(1);
    std::map<std::string, Tensor> partial = file.tensors;
    partial.erase("blocks.1.mlp.fc1.weight");
    CHECK_THROWS_WITH(load_trainable_state(resumed, resumed, partial, file, "ckpt", fingerprint, "--seed 1"),
                      doctest::Contains("has no 'blocks.1.mlp.fc1.weight'"));
  }
}

TEST_CASE("frozen backbone: a checkpoint without a fingerprint holds every parameter and loads whole") {
  VisionTransformer original = small_backbone(3), restored = small_backbone(4);
  const SafetensorsFile file{original.state_dict(), {}, {}};
  load_trainable_state(restored, restored, file.tensors, file, "old.safetensors", frozen_fingerprint(restored),
                       "--seed 4");
  CHECK(same_values(original, restored));
}
