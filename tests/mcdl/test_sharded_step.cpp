// --shards on the real losses: one SimGCD + MCDL step (SimGCD's loss with its batch-wide terms,
// MCDL's banks, buckets, L_sup, MixMatch's cross-row pairs and L_self) in double precision gives
// the loss and gradients of the unsharded step to 1e-12 for S = 1, 2, 4 (and 8, one row per
// weak-view shard): every statistic is computed over the whole batch, not per shard.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "engine/shards.h"
#include "layers/simgcd_model.h"
#include "mcdl/method/mcdl_step.h"
#include "mcdl/method/simgcd_loss.h"
#include "mcdl/run/train_config.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using mcdl::testing::max_abs_diff;

namespace {

constexpr int64_t kBatch = 8, kClasses = 4;

Tensor random_images(uint64_t seed) {
  RandomStream stream(seed, 0);
  std::vector<double> pixels(static_cast<size_t>(kBatch * 14 * 14));
  for (double& p : pixels) p = stream.uniform(-1.0, 1.0);
  return from_vector<double>(pixels, {kBatch, 1, 14, 14});
}

struct StepResult {
  double loss = 0, sup = 0, semi = 0, self = 0;
  std::vector<Tensor> grads;
};

// One step from the same initial model and banks; `variant` picks MCDL's settings.
StepResult sharded_step(std::optional<int64_t> count, const std::string& variant) {
  ModelConfig model_config = parse_model_config("img=14,patch=7,dim=16,depth=1,heads=2,chans=1");
  model_config.head = {32, 8, kClasses};
  SimGCDModel model(model_config);
  model.initialize(3);
  model.set_grad_from_block(0);
  model.to(DType::f64);

  TrainConfig config;
  set_config_option(config, "mcdl-variant", variant);
  config.mu = 2;
  config.mcdl_start = 0;
  const Tensor weak1 = random_images(11), weak2 = random_images(12), strong = random_images(13);
  const std::vector<int64_t> labels{0, 1, -1, -1, -1, -1, -1, -1};
  const std::vector<uint8_t> labelled{1, 1, 0, 0, 0, 0, 0, 0};
  const std::vector<int64_t> bank_index{-1, -1, 0, 1, 2, 3, 4, 5};

  Shards shards(count);
  const auto logits = [&](const Tensor& images) {
    return shards.forward(images, [&](const Tensor& rows) { return model.forward(rows).logits; });
  };
  MemoryBank bank_weak(kBatch - 2, kClasses, config.mu), bank_strong(kBatch - 2, kClasses, config.mu);
  {
    // A first window entry from other views, so that the buckets mix high, medium and low.
    NoGradGuard no_grad;
    const Tensor earlier = logits(concat({strong, weak1}, 0));
    const McdlBatch batch{earlier, earlier, weak2, weak1, labels, labelled, bank_index, 0, 0};
    McdlStep(mcdl_settings(config)).run(logits, batch, bank_weak, bank_strong, false);
  }
  const std::vector<Tensor> out = shards.forward(concat({weak1, weak2}, 0), [&](const Tensor& rows) {
    const HeadOutput head = model.forward(rows);
    return std::vector<Tensor>{head.projection, head.logits};
  });
  SimGCDLossConfig loss_config;
  loss_config.warmup_teacher_epochs = 2;
  loss_config.epochs = 4;
  const SimGCDLossTerms base = simgcd_loss(out[1], out[0], labels, labelled, 1, loss_config);
  const McdlBatch batch{out[1], out[0], weak1, strong, labels, labelled, bank_index, 1, 7};
  const McdlTerms terms = McdlStep(mcdl_settings(config)).run(logits, batch, bank_weak, bank_strong, true);
  const Tensor total = add_mcdl_losses(base.total, terms, 0.35, 1.0);
  std::vector<Tensor> parameters;
  for (const auto& p : model.trainable_parameters()) parameters.push_back(p.tensor);
  shards.backward(total, parameters);
  StepResult result{total.item(), terms.sup.item(), terms.semi.item(), terms.self.item(), {}};
  for (const Tensor& p : parameters) result.grads.push_back(p.grad());
  return result;
}

}  // namespace

TEST_CASE("shards: one SimGCD + MCDL step in double precision is the unsharded step to 1e-12 for S = 1, 2, 4, 8") {
  for (const std::string variant : {"paper", "robust"}) {
    CAPTURE(variant);
    const StepResult whole = sharded_step(std::nullopt, variant);
    // The step exercises every MCDL term, so a per-shard statistic anywhere would show.
    CHECK(whole.sup > 0);
    CHECK(whole.semi > 0);
    CHECK(whole.self > 0);
    for (int64_t count : {1, 2, 4, 8}) {
      CAPTURE(count);
      const StepResult sharded = sharded_step(count, variant);
      CHECK(std::abs(sharded.loss - whole.loss) <= 1e-12 * std::abs(whole.loss));
      REQUIRE(sharded.grads.size() == whole.grads.size());
      for (size_t i = 0; i < whole.grads.size(); ++i) {
        CAPTURE(i);
        REQUIRE(sharded.grads[i].defined() == whole.grads[i].defined());
        if (!whole.grads[i].defined()) continue;
        const double norm = std::sqrt(sum(whole.grads[i] * whole.grads[i]).item());
        CHECK(max_abs_diff(sharded.grads[i], whole.grads[i]) <= 1e-12 * std::max(norm, 1e-300));
      }
    }
  }
}
