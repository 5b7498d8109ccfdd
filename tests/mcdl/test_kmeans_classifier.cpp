// GCD + MCDL's k-means classifier (mcdl/method/kmeans_classifier.h): cosine logits against the
// normalised centres with their gradient in double, the first fit against semi-supervised
// k-means, the warm-started refits, the checkpoint state and the errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/ops.h"
#include "engine/random.h"
#include "mcdl/method/kmeans_classifier.h"
#include "tests/gradcheck.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

// 4 groups of 12 near-unit points in 6-d (group g around axis g), interleaved; the first four
// points of groups 0 and 1 are labelled with their group, groups 2 and 3 are new.
struct Groups {
  Tensor features;
  std::vector<int64_t> group, labelled_rows, labelled_classes;
};

Groups groups() {
  RandomStream rng(3, stream_id("test_kmeans_classifier"));
  Groups g;
  const int64_t n = 48, dim = 6;
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    g.group.push_back(i % 4);
    for (int64_t d = 0; d < dim; ++d) x[i * dim + d] = static_cast<float>((d == i % 4 ? 1.0 : 0.0) + rng.normal(0.0, 0.1));
    if (i < 16 && i % 4 < 2) {
      g.labelled_rows.push_back(i);
      g.labelled_classes.push_back(i % 4);
    }
  }
  g.features = l2_normalize(from_vector(x, {n, dim}));
  return g;
}

KMeansOptions first_fit(int64_t restarts) {
  KMeansOptions o;
  o.k = 4;
  o.restarts = restarts;
  o.max_iters = 50;
  o.seed = 7;
  return o;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("kmeans classifier: the first fit is semi-supervised k-means; logits are cosines to the centres") {
  const Groups g = groups();
  KMeansClassifier classifier(g.labelled_rows, g.labelled_classes, first_fit(3), Device::cpu());
  CHECK_FALSE(classifier.fitted());
  const std::vector<int64_t> clusters = classifier.fit(g.features);
  const KMeansResult expected = semi_supervised_kmeans(g.features, g.labelled_rows, g.labelled_classes, first_fit(3));
  CHECK(clusters == expected.assignment);
  CHECK(same_bits(classifier.state().at("centres"), expected.centres));
  // Every point is nearest its own group's centre, and labelled groups keep their class.
  const std::vector<int64_t> predicted = argmax(classifier.logits(g.features), 1).to_vector<int64_t>();
  CHECK(predicted == clusters);
  for (size_t i = 0; i < g.labelled_rows.size(); ++i) CHECK(clusters[g.labelled_rows[i]] == g.labelled_classes[i]);
  // The logits by hand: cos(x_i, c_k).
  const std::vector<float> x = g.features.to_vector<float>(), c = expected.centres.to_vector<float>();
  const std::vector<float> logits = classifier.logits(g.features * 3.0).to_vector<float>();  // scale-free
  for (int64_t i = 0; i < 48; i += 7)
    for (int64_t k = 0; k < 4; ++k) {
      double dot = 0, xx = 0, cc = 0;
      for (int64_t d = 0; d < 6; ++d) {
        dot += x[i * 6 + d] * c[k * 6 + d];
        xx += x[i * 6 + d] * x[i * 6 + d];
        cc += c[k * 6 + d] * c[k * 6 + d];
      }
      CHECK(logits[i * 4 + k] == doctest::Approx(dot / std::sqrt(xx * cc)).epsilon(1e-5));
    }
}

TEST_CASE("kmeans classifier: logits' gradient into the features (double), none into the centres") {
  const Groups g = groups();
  KMeansClassifier classifier(g.labelled_rows, g.labelled_classes, first_fit(2), Device::cpu());
  classifier.fit(g.features);
  const Tensor x = random_tensor({5, 6}, 11).set_requires_grad(true);
  check_op("kmeans classifier logits", [&](auto& in) { return classifier.logits(in[0]); }, {x});
  CHECK_FALSE(classifier.state().at("centres").requires_grad());
}

TEST_CASE("kmeans classifier: refits warm-start from the last centres (one restart, no draw)") {
  const Groups g = groups();
  KMeansClassifier classifier(g.labelled_rows, g.labelled_classes, first_fit(3), Device::cpu());
  classifier.fit(g.features);
  const Tensor first = classifier.state().at("centres");
  // Slightly moved features: the refit is k-means warm-started from the first centres.
  const Tensor moved = l2_normalize(g.features + random_tensor({48, 6}, 5, -0.02, 0.02, DType::f32));
  const std::vector<int64_t> clusters = classifier.fit(moved);
  KMeansOptions warm = first_fit(1);
  const KMeansResult expected = semi_supervised_kmeans(moved, g.labelled_rows, g.labelled_classes, warm, first);
  CHECK(clusters == expected.assignment);
  CHECK(same_bits(classifier.state().at("centres"), expected.centres));
  // The refit follows the centres it starts from: with the new clusters 2 and 3 swapped in the
  // state, so are the refit's clusters (a cold fit would find them in its own order).
  std::vector<float> swapped = classifier.state().at("centres").to_vector<float>();
  std::swap_ranges(swapped.begin() + 2 * 6, swapped.begin() + 3 * 6, swapped.begin() + 3 * 6);
  KMeansClassifier renamed(g.labelled_rows, g.labelled_classes, first_fit(3), Device::cpu());
  renamed.load_state({{"centres", from_vector(swapped, {4, 6})}});
  const std::vector<int64_t> renamed_clusters = renamed.fit(moved), original = classifier.fit(moved);
  const std::vector<int64_t> swap{0, 1, 3, 2};
  for (size_t i = 0; i < original.size(); ++i) CHECK(renamed_clusters[i] == swap[original[i]]);

  // A classifier loaded from the state continues exactly as the original does.
  KMeansClassifier loaded(g.labelled_rows, g.labelled_classes, first_fit(3), Device::cpu());
  loaded.load_state(classifier.state());
  CHECK(same_bits(loaded.logits(moved), classifier.logits(moved)));
  CHECK(loaded.fit(g.features) == classifier.fit(g.features));
  CHECK(same_bits(loaded.state().at("centres"), classifier.state().at("centres")));
}

TEST_CASE("kmeans classifier: errors name the problem") {
  const Groups g = groups();
  KMeansClassifier classifier(g.labelled_rows, g.labelled_classes, first_fit(1), Device::cpu());
  CHECK_THROWS_WITH(classifier.logits(g.features), doctest::Contains("no centres yet"));
  CHECK_THROWS_WITH(classifier.load_state({{"centres", zeros({3, 6})}}), doctest::Contains("must be f32 [K = 4, D]"));
  CHECK_THROWS_WITH(classifier.load_state({{"centre", zeros({4, 6})}}), doctest::Contains("exactly 'centres'"));
  classifier.fit(g.features);
  CHECK_THROWS_WITH(classifier.logits(zeros({2, 5})), doctest::Contains("features must be [n, 6]"));
  CHECK_THROWS_WITH(classifier.fit(zeros({48, 5})), doctest::Contains("do not match the centres' width 6"));
  CHECK_THROWS_WITH(classifier.load_state({{"centres", zeros({4, 5})}}), doctest::Contains("must be f32 [K = 4, D]"));
}
