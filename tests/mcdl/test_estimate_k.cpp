// Estimating the number of classes (mcdl/run/estimate_k.h): the bounded Brent search on integers,
// and GCD's estimate on clustered synthetic features with a known K.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ops.h"
#include "engine/random.h"
#include "mcdl/run/estimate_k.h"

using namespace mcdl;

TEST_CASE("minimize_over_integers: Brent's bounded search finds an integer minimum in few calls") {
  int calls = 0;
  auto parabola = [&](int64_t k) {
    ++calls;
    return std::pow(static_cast<double>(k) - 37.0, 2.0);
  };
  CHECK(minimize_over_integers(parabola, 1, 1000) == 37);
  CHECK(calls < 30);  // a scan would take 1000
  // A minimum on the bound, and a one-point range.
  CHECK(minimize_over_integers([](int64_t k) { return static_cast<double>(k); }, 5, 90) == 5);
  CHECK(minimize_over_integers([](int64_t k) { return -static_cast<double>(k); }, 5, 90) == 90);
  CHECK(minimize_over_integers([](int64_t k) { return static_cast<double>(k); }, 7, 7) == 7);
  // An asymmetric valley, as accuracy against K is (steep below the truth, flat above).
  auto valley = [](int64_t k) { return k < 12 ? 12.0 - static_cast<double>(k) : 0.02 * (static_cast<double>(k) - 12); };
  CHECK(minimize_over_integers(valley, 3, 200) == 12);
  CHECK_THROWS_WITH(minimize_over_integers(parabola, 9, 3), doctest::Contains("empty range"));
}

TEST_CASE("estimate_num_classes: k-means scored on the labelled images recovers K of separated clusters") {
  // 10 clusters of 60 points in 16 dimensions (centres far apart relative to the spread); the
  // first 5 classes have 20 labelled points each, the other 5 none.
  const int64_t classes = 10, per_class = 60, dims = 16;
  RandomStream stream(5, stream_id("estimate-k-test"));
  std::vector<float> values;
  std::vector<int64_t> labelled_rows, labelled_classes;
  for (int64_t c = 0; c < classes; ++c) {
    std::vector<double> centre(dims);
    for (double& x : centre) x = 4.0 * stream.normal();
    for (int64_t i = 0; i < per_class; ++i) {
      for (int64_t d = 0; d < dims; ++d) values.push_back(static_cast<float>(centre[d] + 0.3 * stream.normal()));
      if (c < 5 && i < 20) {
        labelled_rows.push_back(c * per_class + i);
        labelled_classes.push_back(c);
      }
    }
  }
  const Tensor features = from_vector(values, {classes * per_class, dims});
  KMeansOptions options;
  options.restarts = 3;
  options.seed = 1;
  std::vector<int64_t> tried;
  const KEstimate estimate = estimate_num_classes(features, labelled_rows, labelled_classes, 2, 60, options,
                                                  [&](int64_t k, double) { tried.push_back(k); });
  CHECK(estimate.k == classes);
  CHECK(estimate.labelled_accuracy.at(classes) == doctest::Approx(1.0));
  CHECK(tried.front() >= 5);  // never below the labelled classes
  CHECK(tried.size() < 25);
}
