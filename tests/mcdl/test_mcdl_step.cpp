// MCDL's step under its two variants: the paper variant resolves to the spec's settings
// (docs/method.md §1-§6, §7); the robust variant's safeguards (L_sup over labelled + high
// anchors, the ramp of the loss weights, L_self's confidence mask) each change exactly what they
// say, and at their neutral values the step is the paper's bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "layers/simgcd_model.h"
#include "mcdl/method/dcl_loss.h"
#include "mcdl/method/mcdl_step.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using mcdl::testing::random_tensor;

namespace {

constexpr int64_t kBatch = 8, kLabelled = 2, kClasses = 4;

// A batch of 8: rows 0–1 labelled (classes 0 and 1), rows 2–7 unlabelled in bank slots 0–5.
struct Fixture {
  SimGCDModel model{[] {
    ModelConfig config = parse_model_config("img=14,patch=7,dim=16,depth=1,heads=2,chans=1");
    config.head = {32, 8, kClasses};
    return config;
  }()};
  Tensor images;
  std::vector<int64_t> labels{0, 1, -1, -1, -1, -1, -1, -1};
  std::vector<uint8_t> labelled{1, 1, 0, 0, 0, 0, 0, 0};
  std::vector<int64_t> bank_index{-1, -1, 0, 1, 2, 3, 4, 5};

  Fixture() {
    model.initialize(2);
    model.set_grad_from_block(0);
    RandomStream stream(5, 0);
    std::vector<float> pixels(static_cast<size_t>(kBatch * 14 * 14));
    for (float& p : pixels) p = static_cast<float>(stream.uniform(-1.0, 1.0));
    images = from_vector<float>(pixels, {kBatch, 1, 14, 14});
  }

  // One step with the same images as both weak views and the strong view, so that p_w = p_s and,
  // with μ = 1, every unlabelled sample is high-credibility.
  // `demoted`: the class cap's mask over the 6 bank slots (empty: none).
  McdlTerms run(const TrainConfig& config, std::vector<uint8_t> demoted = {}) {
    MemoryBank weak(kBatch - kLabelled, kClasses, config.mu), strong(kBatch - kLabelled, kClasses, config.mu);
    const HeadOutput out = model.forward(concat({images, images}, 0));
    const auto logits = [this](const Tensor& x) { return model.forward(x).logits; };
    const McdlBatch batch{out.logits, out.projection, images, images, labels, labelled, bank_index, 0, 0};
    McdlStep step(mcdl_settings(config));
    step.set_demoted(std::move(demoted));
    return step.run(logits, batch, weak, strong, true);
  }

  // One step with an EMA teacher's logits of the weak views [2B, K] and of the strong view [B, K],
  // into the given banks.
  McdlTerms run_with_teacher(const TrainConfig& config, const Tensor& teacher_weak, const Tensor& teacher_strong,
                             MemoryBank& weak, MemoryBank& strong) {
    const HeadOutput out = model.forward(concat({images, images}, 0));
    const auto logits = [this](const Tensor& x) { return model.forward(x).logits; };
    const McdlBatch batch{out.logits, out.projection, images,        images,         labels, labelled,
                          bank_index, 0,              0,             &teacher_weak,  &teacher_strong};
    return McdlStep(mcdl_settings(config)).run(logits, batch, weak, strong, true);
  }
};

TrainConfig step_config(const std::string& variant) {
  TrainConfig c;
  set_config_option(c, "mcdl-variant", variant);
  c.mu = 1;
  c.mcdl_start = 0;
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.numel() == b.numel() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("mcdl variant: paper resolves to the spec's settings, robust to its safeguards, explicit values stay") {
  TrainConfig c;
  c.epochs = 200;
  c.warmup_teacher_epochs = 30;
  c.mcdl_variant = McdlVariant::paper;
  const TrainConfig paper = resolve_defaults(c);
  CHECK(paper.tau_s == 0.04);
  CHECK(paper.sup_norm == SupNorm::high);
  CHECK(paper.mcdl_ramp == 0);
  CHECK(paper.self_threshold == 0.0);
  CHECK(paper.mcdl_start == 20);
  c.mcdl_variant = McdlVariant::robust;
  const TrainConfig robust = resolve_defaults(c);
  CHECK(robust.tau_s == 0.07);
  CHECK(robust.sup_norm == SupNorm::labelled_and_high);
  CHECK(robust.mcdl_ramp == 20);
  CHECK(robust.self_threshold == 0.0);
  CHECK(robust.mcdl_start == 30);
  c.tau_s = 0.5;
  c.sup_norm = SupNorm::high;
  c.mcdl_ramp = 0;
  c.self_threshold = 0.0;
  c.mcdl_start = 7;
  const TrainConfig explicit_values = resolve_defaults(c);
  CHECK(explicit_values.tau_s == 0.5);
  CHECK(explicit_values.sup_norm == SupNorm::high);
  CHECK(explicit_values.mcdl_ramp == 0);
  CHECK(explicit_values.self_threshold == 0.0);
  CHECK(explicit_values.mcdl_start == 7);
  // A resolved config resolves to itself (config.json passed back with --config), and reads back
  // as itself.
  CHECK(config_to_json(resolve_defaults(robust)) == config_to_json(robust));
  CHECK(config_to_json(config_from_json(config_to_json(robust), "test")) == config_to_json(robust));
  CHECK_THROWS_WITH(set_config_option(c, "mcdl-variant", "fast"), "--mcdl-variant: expected paper or robust, got 'fast'");
  CHECK_THROWS_WITH(set_config_option(c, "sup-norm", "mean"), "--sup-norm: expected high, union or auto, got 'mean'");
}

TEST_CASE("settings: auto and the legacy -1 leave a setting unset; the text form reads back") {
  TrainConfig c;
  set_config_option(c, "memax-weight", "2.5");
  CHECK(c.memax_weight == 2.5);
  set_config_option(c, "memax-weight", "auto");
  CHECK_FALSE(c.memax_weight.has_value());
  set_config_option(c, "kmeans-restarts", "7");
  set_config_option(c, "kmeans-restarts", "-1");  // config.json of a run written before typed settings
  CHECK_FALSE(c.kmeans_restarts.has_value());
  set_config_option(c, "sup-norm", "");  // the same for a text setting
  CHECK_FALSE(c.sup_norm.has_value());
  set_config_option(c, "clusters", "0");
  CHECK_FALSE(c.clusters.has_value());
  set_config_option(c, "clusters", "12");
  CHECK(c.clusters == 12);
  set_config_option(c, "clusters", "auto");
  CHECK(c.estimate_clusters);
  CHECK_THROWS_WITH(set_config_option(c, "clusters", "-3"), doctest::Contains("--clusters"));
  CHECK_THROWS_WITH(set_config_option(c, "workers", "many"), "--workers: expected an integer, got 'many'");
  // Unset settings are written as auto, set ones as numbers.
  const std::string json = config_to_json(c);
  CHECK(json.find("\"workers\": \"auto\"") != std::string::npos);
  CHECK(json.find("\"clusters\": \"auto\"") != std::string::npos);
  CHECK(json.find("\"mu\": 16") != std::string::npos);
  // Resolution fills every setting that depends on the settings alone.
  c.dataset = "cub";
  c.method = Method::gcd;
  const TrainConfig resolved = resolve_defaults(c);
  CHECK(resolved.memax_weight == 2.0);
  CHECK(resolved.kmeans_restarts == 100);
  CHECK(resolved.kmeans_iters == 200);
  c.method = Method::kmeans;
  c.dataset = "cifar100";
  CHECK(resolve_defaults(c).memax_weight == 4.0);
  CHECK(resolve_defaults(c).kmeans_restarts == 10);
  CHECK(resolve_defaults(c).kmeans_iters == 300);
}

TEST_CASE("mcdl variant: the loss weight is 0 before the start, then ramps linearly to 1") {
  TrainConfig c;
  c.epochs = 20;
  c.mcdl_variant = McdlVariant::paper;
  c.mcdl_start = 3;
  CHECK(mcdl_loss_weight(mcdl_settings(c), 2) == 0.0);
  CHECK(mcdl_loss_weight(mcdl_settings(c), 3) == 1.0);
  c.mcdl_variant = McdlVariant::robust;
  c.mcdl_ramp = 2;
  const McdlSettings robust = mcdl_settings(c);
  CHECK(mcdl_loss_weight(robust, 2) == 0.0);
  CHECK(mcdl_loss_weight(robust, 3) == doctest::Approx(1.0 / 3.0));
  CHECK(mcdl_loss_weight(robust, 4) == doctest::Approx(2.0 / 3.0));
  CHECK(mcdl_loss_weight(robust, 5) == 1.0);
  CHECK(mcdl_loss_weight(robust, 19) == 1.0);
}

TEST_CASE("mcdl step: the robust variant with every safeguard neutral is the paper's step bit for bit") {
  Fixture f;
  const McdlTerms paper = f.run(step_config("paper"));
  TrainConfig neutral = step_config("robust");
  neutral.tau_s = 0.04;
  neutral.sup_norm = SupNorm::high;
  neutral.mcdl_ramp = 0;
  neutral.self_threshold = 0.0;
  const McdlTerms robust = f.run(neutral);
  CHECK(paper.sup.item() > 0);
  CHECK(paper.semi.item() > 0);
  CHECK(paper.self.item() > 0);
  CHECK(same_bits(paper.sup, robust.sup));
  CHECK(same_bits(paper.semi, robust.semi));
  CHECK(same_bits(paper.self, robust.self));
}

TEST_CASE("mcdl step: sup-norm union weighs each high anchor as SimGCD's SupCon weighs a labelled one") {
  Fixture f;
  TrainConfig c = step_config("paper");
  const double high_mean = f.run(c).sup.item();
  c.sup_norm = SupNorm::labelled_and_high;
  // All 6 unlabelled samples are high; with the 2 labelled ones the union holds 8 samples.
  CHECK(f.run(c).sup.item() == doctest::Approx(high_mean * c.sup_weight * 6.0 / 8.0).epsilon(1e-6));
}

TEST_CASE("mcdl step: self-threshold keeps only the confident weak predictions, averaged over every unlabelled row") {
  Fixture f;
  TrainConfig c = step_config("paper");
  const Tensor all_rows = f.run(c).self;
  c.self_threshold = 1e-9;  // every row passes: the same value
  CHECK(same_bits(f.run(c).self, all_rows));
  c.self_threshold = 1.0;  // no softmax of finite logits reaches 1 exactly here: no row passes
  CHECK(f.run(c).self.item() == 0.0);

  // A threshold between the rows' confidences: the masked loss by hand.
  Tensor weak_probs;
  {
    NoGradGuard no_grad;
    const Tensor logits = f.model.forward(f.images).logits;
    weak_probs = softmax(slice(logits, 0, kLabelled, kBatch) / c.student_temp);
  }
  std::vector<float> confidence = max(weak_probs, 1).to_vector<float>();
  std::vector<float> sorted = confidence;
  std::sort(sorted.begin(), sorted.end());
  c.self_threshold = (static_cast<double>(sorted[2]) + static_cast<double>(sorted[3])) / 2.0;
  std::vector<int64_t> kept;
  for (size_t i = 0; i < confidence.size(); ++i)
    if (confidence[i] >= c.self_threshold) kept.push_back(static_cast<int64_t>(i));
  REQUIRE(kept.size() == 3);
  const Tensor rows = from_vector<int64_t>(kept, {3});
  const Tensor strong_logits = slice(f.model.forward(f.images).logits, 0, kLabelled, kBatch);
  const double expected =
      self_loss(index_select(weak_probs, rows), index_select(strong_logits, rows), c.tau_u, c.student_temp).item() *
      3.0 / 6.0;
  CHECK(f.run(c).self.item() == doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("mcdl step: --mcdl-losses leaves out exactly the terms it does not name") {
  Fixture f;
  TrainConfig c = step_config("paper");
  const McdlTerms all = f.run(c);
  set_config_option(c, "mcdl-losses", "sup,self");
  const McdlTerms no_semi = f.run(c);
  CHECK(same_bits(no_semi.sup, all.sup));
  CHECK(no_semi.semi.item() == 0.0);
  CHECK(same_bits(no_semi.self, all.self));
  set_config_option(c, "mcdl-losses", "semi");
  const McdlTerms semi_only = f.run(c);
  CHECK(semi_only.sup.item() == 0.0);
  CHECK(same_bits(semi_only.semi, all.semi));
  CHECK(semi_only.self.item() == 0.0);
  set_config_option(c, "mcdl-losses", "none");
  CHECK(f.run(c).semi.item() == 0.0);
  CHECK(mcdl_losses_name(c.mcdl_losses) == "none");
  CHECK_THROWS_WITH(set_config_option(c, "mcdl-losses", "sup,mixup"), doctest::Contains("--mcdl-losses"));
  set_config_option(c, "mcdl-losses", "self,sup");
  CHECK(mcdl_losses_name(c.mcdl_losses) == "sup,self");
}

TEST_CASE("mcdl step: the class cap's demoted high samples leave L_sup and join MixMatch as medium") {
  Fixture f;
  const TrainConfig c = step_config("paper");
  const McdlTerms uncapped = f.run(c);
  const McdlTerms none_marked = f.run(c, std::vector<uint8_t>(6, 0));
  CHECK(same_bits(none_marked.sup, uncapped.sup));
  CHECK(same_bits(none_marked.semi, uncapped.semi));
  CHECK(same_bits(none_marked.self, uncapped.self));

  // Slots 1 and 4 (batch rows 3 and 6) demoted: L_sup's anchors are the labelled rows and the
  // four other high rows, each with its own argmax as the pseudo-label.
  const McdlTerms capped = f.run(c, {0, 1, 0, 0, 1, 0});
  Tensor projection;
  std::vector<int64_t> sup_labels = f.labels;
  std::vector<uint8_t> is_high(kBatch, 0);
  {
    NoGradGuard no_grad;
    const HeadOutput out = f.model.forward(concat({f.images, f.images}, 0));
    projection = out.projection;
    const std::vector<int64_t> argmax_rows = argmax(slice(out.logits, 0, 0, kBatch), 1).to_vector<int64_t>();
    for (int64_t row : {2, 4, 5, 7}) {
      sup_labels[static_cast<size_t>(row)] = argmax_rows[static_cast<size_t>(row)];
      is_high[static_cast<size_t>(row)] = 1;
    }
  }
  const double expected = dcl_sup_loss(projection, sup_labels, f.labelled, is_high, *resolve_defaults(c).tau_s).item();
  CHECK(capped.sup.item() == doctest::Approx(expected).epsilon(1e-6));
  CHECK(capped.sup.item() != doctest::Approx(uncapped.sup.item()).epsilon(1e-6));
  CHECK(capped.semi.item() != doctest::Approx(uncapped.semi.item()).epsilon(1e-6));  // soft targets for two rows
  CHECK(same_bits(capped.self, uncapped.self));  // L_self does not read the buckets
}

TEST_CASE("mcdl step: an EMA teacher's predictions fill both banks and are L_self's targets") {
  Fixture f;
  const TrainConfig config = step_config("robust");
  const Tensor teacher_weak = random_tensor({2 * kBatch, kClasses}, 11, -3.0, 3.0, DType::f32),
               teacher_strong = random_tensor({kBatch, kClasses}, 12, -3.0, 3.0, DType::f32);
  MemoryBank weak(kBatch - kLabelled, kClasses, config.mu), strong(kBatch - kLabelled, kClasses, config.mu);
  const McdlTerms with_teacher = f.run_with_teacher(config, teacher_weak, teacher_strong, weak, strong);
  // Rows 2–7 are the unlabelled ones, in bank slots 0–5; τ = the classifier's temperature 0.1.
  std::vector<int64_t> rows, slots;
  for (int64_t i = kLabelled; i < kBatch; ++i) {
    rows.push_back(i);
    slots.push_back(i - kLabelled);
  }
  const HostIndex rows_t(rows, Device::cpu()), slots_t(slots, Device::cpu());
  const Tensor expected_weak = index_select(
      (softmax(slice(teacher_weak, 0, 0, kBatch) / 0.1) + softmax(slice(teacher_weak, 0, kBatch, 2 * kBatch) / 0.1)) * 0.5,
      rows_t);
  const Tensor expected_strong = index_select(softmax(teacher_strong / 0.1), rows_t);
  const auto close = [](const Tensor& a, const Tensor& b) {
    const auto x = a.to(DType::f64).to_vector<double>(), y = b.to(DType::f64).to_vector<double>();
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) CHECK(x[i] == doctest::Approx(y[i]).epsilon(1e-6));
  };
  close(weak.mean_probs(slots_t), expected_weak);
  close(strong.mean_probs(slots_t), expected_strong);
  // L_self: the teacher's weak probabilities teach the model's strong view.
  const Tensor model_strong = f.model.forward(f.images).logits;
  CHECK(with_teacher.self.item() ==
        doctest::Approx(self_loss(expected_weak, index_select(model_strong, rows_t), config.tau_u, 0.1).item())
            .epsilon(1e-6));
  CHECK(with_teacher.self.item() != f.run(config).self.item());
}
