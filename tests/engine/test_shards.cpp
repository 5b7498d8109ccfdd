#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/shards.h"
#include "tests/gradcheck.h"
#include "tests/thread_world.h"

using namespace mcdl;
using namespace mcdl::testing;

TEST_CASE("shards: rows are cut into contiguous shards, the first ones a row longer") {
  using Ranges = std::vector<std::pair<int64_t, int64_t>>;
  CHECK(Shards::ranges(8, 4) == Ranges{{0, 2}, {2, 4}, {4, 6}, {6, 8}});
  CHECK(Shards::ranges(10, 4) == Ranges{{0, 3}, {3, 6}, {6, 8}, {8, 10}});
  CHECK(Shards::ranges(2, 3) == Ranges{{0, 1}, {1, 2}, {2, 2}});
  CHECK(Shards::ranges(5, 1) == Ranges{{0, 5}});
  CHECK_THROWS_WITH(Shards::ranges(4, 0), doctest::Contains("cannot cut 4 rows into 0 shards"));
  CHECK_THROWS_WITH(Shards(0), doctest::Contains("at least 1"));
}

TEST_CASE("autograd: a backward from several roots sums what reaches each input") {
  Tensor x = random_tensor({3, 2}, 1).set_requires_grad(true);
  const Tensor y1 = x * 2.0, y2 = x * x;
  const Tensor g1 = random_tensor({3, 2}, 2), g2 = random_tensor({3, 2}, 3);
  run_backward(std::vector<Tensor>{y1, y2}, std::vector<Tensor>{g1, g2}, false);
  const Tensor expected = g1 * 2.0 + g2 * x.detach() * 2.0;
  CHECK(max_abs_diff(x.grad(), expected) < 1e-15);
  CHECK_THROWS_WITH(run_backward(std::vector<Tensor>{x * 3.0}, std::vector<Tensor>{random_tensor({2, 3}, 4)}, false),
                    doctest::Contains("gradient is"));
}

namespace {

// A two-layer model whose per-row outputs feed losses made of batch statistics: the mean of the
// softmax over the batch (SimGCD's mean-entropy term), a batch-normalised projection and a
// second forward of other rows (MCDL's strong view), so a loss computed per shard would differ.
struct TinyModel {
  Tensor w1 = random_tensor({6, 5}, 11).set_requires_grad(true);
  Tensor w2 = random_tensor({5, 4}, 12).set_requires_grad(true);
  std::vector<Tensor> parameters() const { return {w1, w2}; }
  std::vector<Tensor> forward(const Tensor& rows) const {
    const Tensor hidden = sqrt(matmul(rows, w1) * matmul(rows, w1) + 1.0);
    return {matmul(hidden, w2), hidden};
  }
};

struct StepResult {
  double loss;
  std::vector<Tensor> grads;
};

StepResult one_step(std::optional<int64_t> count, const Tensor& images, const Tensor& other) {
  const TinyModel model;
  Shards shards(count);
  const std::vector<Tensor> out = shards.forward(images, [&](const Tensor& rows) { return model.forward(rows); });
  const Tensor other_logits = shards.forward(other, [&](const Tensor& rows) { return model.forward(rows)[0]; });
  {
    NoGradGuard no_grad;  // a teacher's forward: no graph, nothing kept
    (void)shards.forward(other, [&](const Tensor& rows) { return model.forward(rows)[0]; });
  }
  const Tensor mean_probs = mean(softmax(out[0]), 0);
  const Tensor entropy = sum(mean_probs * log(mean_probs));
  const Tensor centred = out[1] - mean(out[1], 0, true);
  const Tensor spread = mean(centred * centred) / mean(out[1] * out[1]);
  const Tensor agreement = mean(log_softmax(other_logits) * softmax(out[0]).detach() * -1.0);
  const Tensor loss = entropy + spread + agreement;
  shards.backward(loss, model.parameters());
  return {loss.item(), {model.w1.grad(), model.w2.grad()}};
}

}  // namespace

TEST_CASE("shards: S = 1, 2, 3 and 4 give the whole batch's loss and gradients in double precision") {
  const Tensor images = random_tensor({8, 6}, 21), other = random_tensor({8, 6}, 22);
  const StepResult whole = one_step(std::nullopt, images, other);
  for (int64_t count : {1, 2, 3, 4}) {
    CAPTURE(count);
    const StepResult sharded = one_step(count, images, other);
    CHECK(std::abs(sharded.loss - whole.loss) <= 1e-12 * std::abs(whole.loss));
    for (size_t i = 0; i < whole.grads.size(); ++i) {
      const double norm = std::sqrt(sum(whole.grads[i] * whole.grads[i]).item());
      CHECK(max_abs_diff(sharded.grads[i], whole.grads[i]) <= 1e-12 * norm);
    }
  }
  // The same S twice: the same bits.
  const StepResult a = one_step(4, images, other), b = one_step(4, images, other);
  CHECK(a.loss == b.loss);
  CHECK(max_abs_diff(a.grads[0], b.grads[0]) == 0.0);
}

TEST_CASE("shards: a shard's gradient is its own backward, summed in shard order") {
  // Two shards of one row each: the sum of the per-shard gradients, added in order, is the
  // parameters' gradient bit for bit.
  const TinyModel model;
  const Tensor images = random_tensor({2, 6}, 31);
  Shards shards(2);
  const Tensor out = shards.forward(images, [&](const Tensor& rows) { return model.forward(rows)[0]; });
  const Tensor loss = sum(out * out);
  shards.backward(loss, model.parameters());
  std::vector<Tensor> expected;
  for (int64_t row = 0; row < 2; ++row) {
    const TinyModel copy;
    const Tensor own = copy.forward(slice(images, 0, row, row + 1))[0];
    sum(own * own).backward();
    expected.push_back(copy.w1.grad());
  }
  CHECK(max_abs_diff(model.w1.grad(), expected[0] + expected[1]) == 0.0);
}

TEST_CASE("shards: a loss that reaches a parameter outside the sharded forwards is refused") {
  const TinyModel model;
  Shards shards(2);
  const Tensor out =
      shards.forward(random_tensor({4, 6}, 41), [&](const Tensor& rows) { return model.forward(rows)[0]; });
  const Tensor loss = sum(out) + sum(model.w2);
  CHECK_THROWS_WITH(shards.backward(loss, model.parameters()), doctest::Contains("outside the sharded forwards"));
  Shards shards2(2);
  Tensor(model.w1).set_grad(zeros({6, 5}, DType::f64));
  CHECK_THROWS_WITH(shards2.backward(sum(model.w1), model.parameters()), doctest::Contains("zero_grad first"));
}

TEST_CASE("shards: a forward must keep one output row per input row") {
  Shards shards(2);
  CHECK_THROWS_WITH(shards.forward(random_tensor({4, 3}, 51), [](const Tensor& rows) { return sum(rows, 0, true); }),
                    doctest::Contains("one row per input row"));
}

namespace {

// A step on two views of the same images ([weak1; weak2], cut by image with blocks = 2), a second
// forward on rows of weak1 picked across the whole batch (MCDL's mixed images) and losses over
// the whole batch.
StepResult two_view_step(Shards& shards, const Tensor& weak1, const Tensor& weak2, const std::vector<int64_t>& picked) {
  const TinyModel model;
  const std::vector<Tensor> out =
      shards.forward(concat({weak1, weak2}, 0), [&](const Tensor& rows) { return model.forward(rows); }, 2);
  const Tensor picked_rows = shards.rows_everywhere(weak1, picked);
  const Tensor other = shards.forward(picked_rows * 0.5, [&](const Tensor& rows) { return model.forward(rows)[0]; });
  const Tensor mean_probs = mean(softmax(out[0]), 0);
  const int64_t b = weak1.size(0);
  const Tensor agreement = mean(softmax(slice(out[0], 0, 0, b)) * log_softmax(slice(out[0], 0, b, 2 * b)) * -1.0);
  const Tensor loss = sum(mean_probs * log(mean_probs)) + agreement + mean(other * other) + mean(out[1]);
  shards.backward(loss, model.parameters());
  return {loss.item(), {model.w1.grad(), model.w2.grad()}};
}

// `t` with the rows outside [begin, end) zeroed: what a process holds of a batch it prepared
// only in part.
Tensor only_rows(const Tensor& t, std::pair<int64_t, int64_t> rows) {
  std::vector<Tensor> parts;
  if (rows.first > 0) parts.push_back(zeros({rows.first, t.size(1)}, t.dtype()));
  parts.push_back(slice(t, 0, rows.first, rows.second));
  if (rows.second < t.size(0)) parts.push_back(zeros({t.size(0) - rows.second, t.size(1)}, t.dtype()));
  return concat(parts, 0);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.nbytes())) == 0;
}

}  // namespace

TEST_CASE("shards: with views in blocks a shard takes both views of its images, and the losses stay global") {
  const Tensor weak1 = random_tensor({7, 6}, 61), weak2 = random_tensor({7, 6}, 62);
  const std::vector<int64_t> picked = {5, 0, 6, 2, 2};
  Shards off;
  const StepResult whole = two_view_step(off, weak1, weak2, picked);
  for (int64_t count : {1, 2, 3, 4, 8}) {
    CAPTURE(count);
    Shards shards(count);
    const StepResult sharded = two_view_step(shards, weak1, weak2, picked);
    CHECK(std::abs(sharded.loss - whole.loss) <= 1e-12 * std::abs(whole.loss));
    for (size_t i = 0; i < whole.grads.size(); ++i) {
      const double norm = std::sqrt(sum(whole.grads[i] * whole.grads[i]).item());
      CHECK(max_abs_diff(sharded.grads[i], whole.grads[i]) <= 1e-12 * norm);
    }
  }
  // Each shard's forward sees its images' rows of both views, first view first.
  Shards shards(3);
  std::vector<Tensor> seen;
  (void)shards.forward(concat({weak1, weak2}, 0), [&](const Tensor& rows) {
    seen.push_back(rows);
    return rows * 2.0;
  }, 2);
  REQUIRE(seen.size() == 3);  // images [0, 3), [3, 5), [5, 7)
  CHECK(max_abs_diff(seen[1], concat({slice(weak1, 0, 3, 5), slice(weak2, 0, 3, 5)}, 0)) == 0.0);
  CHECK_THROWS_WITH(shards.forward(random_tensor({5, 6}, 63), [](const Tensor& rows) { return rows; }, 2),
                    doctest::Contains("5 rows are not 2 blocks"));
}

TEST_CASE("shards: a process's own images, and rows gathered from the processes that hold them") {
  using Range = std::pair<int64_t, int64_t>;
  CHECK(Shards(4).own_positions(10) == Range{0, 10});
  CHECK(Shards().own_positions(3) == Range{0, 3});
  const Tensor weak1 = random_tensor({10, 6}, 71), weak2 = random_tensor({10, 6}, 72);
  const std::vector<int64_t> picked = {9, 0, 4, 6, 6, 3};
  for (const auto& [ranks, count] : std::vector<std::pair<int, int64_t>>{{2, 4}, {3, 3}, {3, 6}}) {
    CAPTURE(ranks);
    CAPTURE(count);
    Shards one(count);
    const StepResult expected = two_view_step(one, weak1, weak2, picked);
    std::vector<StepResult> results(static_cast<size_t>(ranks));
    std::vector<Range> owned(static_cast<size_t>(ranks));
    ThreadWorld(ranks).run([&](Collective& world) {
      Shards shards(count, &world);
      const Range own = shards.own_positions(10);
      owned[static_cast<size_t>(world.rank())] = own;
      results[static_cast<size_t>(world.rank())] =
          two_view_step(shards, only_rows(weak1, own), only_rows(weak2, own), picked);
    });
    // The ranks' images tile the batch in rank order (whole shards each).
    for (int q = 0; q < ranks; ++q) {
      const int64_t per_rank = count / ranks;
      CHECK(owned[static_cast<size_t>(q)] == Range{Shards::ranges(10, count)[static_cast<size_t>(q * per_rank)].first,
                                                   Shards::ranges(10, count)[static_cast<size_t>((q + 1) * per_rank - 1)].second});
    }
    for (const StepResult& result : results) {
      CHECK(result.loss == expected.loss);
      for (size_t i = 0; i < expected.grads.size(); ++i) CHECK(same_bits(result.grads[i], expected.grads[i]));
    }
  }
}
