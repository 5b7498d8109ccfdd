// t-SNE for the pictures of a run: clustered synthetic data keeps its neighbourhoods
// (trustworthiness, as scikit-learn measures it) and its clusters apart in 2-D.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/random.h"
#include "mcdl/evaluation/tsne.h"

using namespace mcdl;

TEST_CASE("t-SNE: clustered points keep their neighbourhoods and separate in 2-D") {
  const int64_t clusters = 4, per_cluster = 40, d = 20, n = clusters * per_cluster;
  RandomStream stream(3, stream_id("tsne-test"));
  std::vector<double> x;
  std::vector<int64_t> label;
  for (int64_t c = 0; c < clusters; ++c) {
    std::vector<double> centre(d);
    for (double& v : centre) v = 5.0 * stream.normal();
    for (int64_t i = 0; i < per_cluster; ++i) {
      for (int64_t k = 0; k < d; ++k) x.push_back(centre[static_cast<size_t>(k)] + stream.normal());
      label.push_back(c);
    }
  }
  TsneOptions options;
  options.perplexity = 20;
  options.iterations = 500;
  const std::vector<double> y = tsne_2d(x, n, d, options);
  CHECK(trustworthiness(x, d, y, 2, n, 5) > 0.9);
  // Each point's nearest embedded neighbour is from its own cluster.
  int64_t agree = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t nearest = -1;
    double best = INFINITY;
    for (int64_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double dist = std::hypot(y[2 * i] - y[2 * j], y[2 * i + 1] - y[2 * j + 1]);
      if (dist < best) best = dist, nearest = j;
    }
    agree += label[static_cast<size_t>(nearest)] == label[static_cast<size_t>(i)];
  }
  CHECK(agree >= n - 2);
  // A random layout is not trustworthy: the measure can fail.
  std::vector<double> random(static_cast<size_t>(2 * n));
  for (double& v : random) v = stream.normal();
  CHECK(trustworthiness(x, d, random, 2, n, 5) < 0.7);
}
