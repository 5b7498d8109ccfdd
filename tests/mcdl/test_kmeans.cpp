#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "engine/random.h"
#include "mcdl/evaluation/kmeans.h"
#include "tests/mcdl/eval_fixtures.h"
#include "tests/thread_world.h"

using namespace mcdl;

namespace {

struct Blobs {
  Tensor features;
  std::vector<int64_t> blob;
};

// `blobs` groups of `per_blob` points: blob b is centred at 10 on axis b (and 0 elsewhere), with
// N(0, 0.3²) noise, so every point is far nearer its own centre than any other. Points are
// interleaved (point i belongs to blob i % blobs).
Blobs separated_blobs(int64_t blobs, int64_t per_blob, int64_t dim, uint64_t seed) {
  RandomStream rng(seed, stream_id("test_kmeans_blobs"));
  const int64_t n = blobs * per_blob;
  std::vector<float> x(static_cast<size_t>(n * dim));
  std::vector<int64_t> blob(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    blob[i] = i % blobs;
    for (int64_t d = 0; d < dim; ++d)
      x[i * dim + d] = static_cast<float>((d == blob[i] ? 10.0 : 0.0) + rng.normal(0.0, 0.3));
  }
  return {from_vector(x, {n, dim}), blob};
}

// The first `count` points of blobs 0..blobs−1 and their blobs: the labelled part of a
// semi-supervised problem.
std::pair<std::vector<int64_t>, std::vector<int64_t>> first_of_blobs(const Blobs& data, int64_t blobs, size_t count) {
  std::vector<int64_t> indices, classes;
  for (int64_t i = 0; i < static_cast<int64_t>(data.blob.size()) && indices.size() < count; ++i)
    if (data.blob[i] < blobs) {
      indices.push_back(i);
      classes.push_back(data.blob[i]);
    }
  return {indices, classes};
}

// True when the clusters are exactly the groups, up to renaming.
bool same_partition(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::map<int64_t, int64_t> a_to_b, b_to_a;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a_to_b.emplace(a[i], b[i]).first->second != b[i]) return false;
    if (b_to_a.emplace(b[i], a[i]).first->second != a[i]) return false;
  }
  return true;
}

double inertia_of(const Tensor& features, const std::vector<int64_t>& assignment, const Tensor& centres) {
  const std::vector<float> x = features.to_vector<float>(), c = centres.to_vector<float>();
  const int64_t dim = features.size(1);
  double total = 0.0;
  for (size_t i = 0; i < assignment.size(); ++i)
    for (int64_t d = 0; d < dim; ++d) {
      const double diff = static_cast<double>(x[i * dim + d]) - c[assignment[i] * dim + d];
      total += diff * diff;
    }
  return total;
}

}  // namespace

TEST_CASE("kmeans: well-separated blobs are recovered exactly, centres are the blob means") {
  const Blobs data = separated_blobs(5, 40, 8, 1);
  const KMeansResult result = kmeans(data.features, {.k = 5, .restarts = 3, .max_iters = 100, .tol = 1e-4, .seed = 3});
  CHECK(same_partition(result.assignment, data.blob));
  CHECK(result.centres.shape() == Shape{5, 8});
  CHECK(result.iterations >= 1);
  CHECK(result.iterations <= 100);
  // The inertia is the exact sum over the returned assignment and centres (f32 centres).
  CHECK(result.inertia == doctest::Approx(inertia_of(data.features, result.assignment, result.centres)).epsilon(1e-6));
}

TEST_CASE("kmeans: inertia and partition as sklearn's KMeans(n_init=10, random_state=0) on blob fixtures") {
  mcdl::testing::EvalFixture fixture("kmeans_blobs.txt");
  int cases = 0;
  while (fixture.good()) {
    const auto n = fixture.next<int64_t>(), dim = fixture.next<int64_t>(), k = fixture.next<int64_t>();
    const Tensor features = from_vector(fixture.next<float>(n * dim), {n, dim});
    const auto sklearn_inertia = fixture.next<double>();
    const auto blob = fixture.next<int64_t>(n);
    CAPTURE(n);
    const KMeansResult result = kmeans(features, {.k = k, .restarts = 10, .max_iters = 300, .tol = 1e-4, .seed = 0});
    // Both find the same optimum: equal up to f32 rounding of the centres.
    CHECK(result.inertia <= sklearn_inertia * (1.0 + 1e-6));
    CHECK(result.inertia == doctest::Approx(sklearn_inertia).epsilon(1e-6));
    // sklearn recovers the make_blobs groups exactly on both fixtures; so must this.
    CHECK(same_partition(result.assignment, blob));
    ++cases;
  }
  CHECK(cases == 2);
}

TEST_CASE("kmeans: deterministic for a seed and any thread count; seeds differ in their start") {
  const Blobs data = separated_blobs(6, 30, 10, 2);
  // k below the number of blobs: several local optima, so the seed matters.
  const KMeansOptions options{.k = 4, .restarts = 2, .max_iters = 50, .tol = 1e-4, .seed = 9};
  const KMeansResult a = kmeans(data.features, options);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const KMeansResult b = kmeans(data.features, options);
  omp_set_num_threads(threads);
  CHECK(a.assignment == b.assignment);
  CHECK(a.inertia == b.inertia);
  CHECK(a.iterations == b.iterations);
  CHECK(a.centres.to_vector<float>() == b.centres.to_vector<float>());
}

TEST_CASE("kmeans: features on the (emulated) CUDA device give the CPU result") {
  const Blobs data = separated_blobs(4, 25, 6, 4);
  const KMeansOptions options{.k = 4, .restarts = 2, .max_iters = 50, .tol = 1e-4, .seed = 1};
  const KMeansResult cpu = kmeans(data.features, options);
  const KMeansResult gpu = kmeans(data.features.to(Device::cuda()), options);
  CHECK(gpu.centres.device() == Device::cuda());
  CHECK(gpu.assignment == cpu.assignment);
  CHECK(gpu.inertia == doctest::Approx(cpu.inertia).epsilon(1e-9));
  const KMeansResult semi_cpu = semi_supervised_kmeans(data.features, {0, 1, 5}, {0, 1, 1}, options);
  const KMeansResult semi_gpu = semi_supervised_kmeans(data.features.to(Device::cuda()), {0, 1, 5}, {0, 1, 1}, options);
  CHECK(semi_gpu.assignment == semi_cpu.assignment);
  CHECK(semi_gpu.inertia == doctest::Approx(semi_cpu.inertia).epsilon(1e-9));
}

TEST_CASE("kmeans: an empty cluster takes a far point; duplicate points give finite centres") {
  // Three distinct locations, five points, k = 3: every start is fine. Only two distinct
  // locations and k = 3: one cluster must share a location; nothing may be NaN.
  const Tensor features = from_vector<float>({0, 0, 0, 0, 0, 0, 5, 5, 5, 5}, {5, 2});
  const KMeansResult result = kmeans(features, {.k = 3, .restarts = 2, .max_iters = 20, .tol = 1e-4, .seed = 0});
  for (float v : result.centres.to_vector<float>()) CHECK(std::isfinite(v));
  CHECK(result.inertia == doctest::Approx(0.0));
}

TEST_CASE("semi_supervised_kmeans: labelled points keep their class, new blobs are found") {
  // 6 blobs; blobs 0..2 are the labelled classes; 10 points of each labelled blob are labelled.
  const Blobs data = separated_blobs(6, 30, 8, 5);
  const auto [indices, classes] = first_of_blobs(data, 3, 30);
  const KMeansResult result =
      semi_supervised_kmeans(data.features, indices, classes, {.k = 6, .restarts = 3, .max_iters = 200, .tol = 1e-4, .seed = 0});
  for (size_t j = 0; j < indices.size(); ++j) CHECK(result.assignment[indices[j]] == classes[j]);
  // Every point of a labelled blob joins that class's cluster; the new blobs form the rest.
  CHECK(same_partition(result.assignment, data.blob));
  for (int64_t i = 0; i < 180; ++i)
    if (data.blob[i] < 3) CHECK(result.assignment[i] == data.blob[i]);
  CHECK(result.inertia == doctest::Approx(inertia_of(data.features, result.assignment, result.centres)).epsilon(1e-6));
}

TEST_CASE("semi_supervised_kmeans: labels pin points even against the geometry; classes map by rank") {
  // Two tight groups; the labelled point 0 sits in group A but is labelled with class 7, the
  // only labelled class, so it becomes cluster 0 and stays there.
  const Tensor features = from_vector<float>({0, 0, 0.1f, 0, 0, 0.1f, 8, 8, 8.1f, 8, 8, 8.1f}, {6, 2});
  const KMeansResult result =
      semi_supervised_kmeans(features, {3}, {7}, {.k = 2, .restarts = 2, .max_iters = 50, .tol = 1e-8, .seed = 1});
  CHECK(result.assignment[3] == 0);
  CHECK(result.assignment[4] == 0);
  CHECK(result.assignment[5] == 0);
  CHECK(result.assignment[0] == 1);
  // k equal to the number of labelled classes: no k-means++ draw, unlabelled points join the nearest class.
  const KMeansResult full = semi_supervised_kmeans(features, {0, 3}, {4, 2}, {.k = 2, .restarts = 1, .seed = 0});
  CHECK(full.assignment == std::vector<int64_t>{1, 1, 1, 0, 0, 0});
  // Deterministic for a seed.
  const KMeansResult again =
      semi_supervised_kmeans(features, {3}, {7}, {.k = 2, .restarts = 2, .max_iters = 50, .tol = 1e-8, .seed = 1});
  CHECK(again.assignment == result.assignment);
  CHECK(again.inertia == result.inertia);
}

TEST_CASE("kmeans and semi_supervised_kmeans: errors name the function and the problem") {
  const Tensor features = zeros({4, 2});
  CHECK_THROWS_WITH(kmeans(features, {.k = 5}), doctest::Contains("kmeans: f32[4, 2] cpu has fewer points than k = 5"));
  CHECK_THROWS_WITH(kmeans(features, {.k = 0}), doctest::Contains("kmeans: k = 0 must be at least 1"));
  CHECK_THROWS_WITH(kmeans(zeros({4}), {.k = 1}), doctest::Contains("kmeans: features must be [N, D]"));
  CHECK_THROWS_WITH(kmeans(zeros({4, 2}, DType::i64), {.k = 1}), doctest::Contains("must be f32 or f64"));
  CHECK_THROWS_WITH(kmeans(features, {.k = 2, .restarts = 0}), doctest::Contains("restarts = 0"));
  CHECK_THROWS_WITH(semi_supervised_kmeans(features, {0, 1}, {0}, {.k = 2}),
                    doctest::Contains("semi_supervised_kmeans: 2 labelled indices but 1 classes"));
  CHECK_THROWS_WITH(semi_supervised_kmeans(features, {9}, {0}, {.k = 2}),
                    doctest::Contains("labelled index 9 is outside f32[4, 2] cpu"));
  CHECK_THROWS_WITH(semi_supervised_kmeans(features, {0, 0}, {0, 0}, {.k = 2}), doctest::Contains("row 0 is labelled twice"));
  CHECK_THROWS_WITH(semi_supervised_kmeans(features, {0, 1, 2}, {0, 1, 2}, {.k = 2}),
                    doctest::Contains("3 labelled classes do not fit in k = 2"));
  CHECK_THROWS_WITH(semi_supervised_kmeans(features, {0, 1, 2, 3}, {0, 1, 0, 1}, {.k = 3}),
                    doctest::Contains("no row is unlabelled"));
}

TEST_CASE("semi_supervised_kmeans: a warm start keeps the new clusters' identities, draws nothing, checks its centres") {
  // 6 blobs, 0..2 labelled; a cold run finds new blobs 3..5 as some clusters 3..5.
  const Blobs data = separated_blobs(6, 30, 8, 5);
  const auto [indices, classes] = first_of_blobs(data, 3, 30);
  const KMeansOptions cold{.k = 6, .restarts = 3, .max_iters = 200, .tol = 1e-4, .seed = 0};
  const KMeansResult first = semi_supervised_kmeans(data.features, indices, classes, cold);
  // Warm-started from the cold result's centres with new clusters 3 and 5 swapped: the new blobs
  // follow their starting centres, whatever the seed.
  std::vector<float> swapped = first.centres.to_vector<float>();
  std::swap_ranges(swapped.begin() + 3 * 8, swapped.begin() + 4 * 8, swapped.begin() + 5 * 8);
  KMeansOptions warm{.k = 6, .restarts = 1, .max_iters = 200, .tol = 1e-4, .seed = 9};
  const KMeansResult second =
      semi_supervised_kmeans(data.features, indices, classes, warm, from_vector(swapped, {6, 8}));
  const std::vector<int64_t> rename{0, 1, 2, 5, 4, 3};
  for (int64_t i = 0; i < 180; ++i) CHECK(second.assignment[i] == rename[first.assignment[i]]);
  warm.seed = 0;
  CHECK(semi_supervised_kmeans(data.features, indices, classes, warm, from_vector(swapped, {6, 8})).assignment ==
        second.assignment);
  // The labelled clusters restart from the class means, not from the given rows: any rows 0..2 give
  // the same result.
  std::fill(swapped.begin(), swapped.begin() + 3 * 8, 100.0f);
  CHECK(semi_supervised_kmeans(data.features, indices, classes, warm, from_vector(swapped, {6, 8})).assignment ==
        second.assignment);

  CHECK_THROWS_WITH(semi_supervised_kmeans(data.features, indices, classes, warm, zeros({5, 8})),
                    doctest::Contains("initial centres f32[5, 8] cpu must be [k = 6, D = 8]"));
  warm.restarts = 2;
  CHECK_THROWS_WITH(semi_supervised_kmeans(data.features, indices, classes, warm, zeros({6, 8})),
                    doctest::Contains("restarts must be 1"));
}

TEST_CASE("kmeans and semi_supervised_kmeans: restarts shared by 2 and 3 ranks give one process's result on every rank") {
  const Blobs data = separated_blobs(6, 20, 8, 5);
  const auto [labelled, classes] = first_of_blobs(data, 2, 10);
  // k below the number of blobs: the restarts end in different optima, so which one is kept matters.
  for (const int64_t restarts : {2, 5, 7}) {
    CAPTURE(restarts);
    const KMeansOptions options{.k = 4, .restarts = restarts, .max_iters = 50, .tol = 1e-4, .seed = 3};
    const KMeansResult plain = kmeans(data.features, options);
    const KMeansResult semi = semi_supervised_kmeans(data.features, labelled, classes, options);
    for (const int ranks : {2, 3}) {
      CAPTURE(ranks);
      std::vector<KMeansResult> plains(static_cast<size_t>(ranks)), semis(static_cast<size_t>(ranks));
      testing::ThreadWorld(ranks).run([&](Collective& world) {
        KMeansOptions shared = options;
        shared.world = &world;
        plains[static_cast<size_t>(world.rank())] = kmeans(data.features, shared);
        semis[static_cast<size_t>(world.rank())] = semi_supervised_kmeans(data.features, labelled, classes, shared);
      });
      for (int q = 0; q < ranks; ++q) {
        CAPTURE(q);
        for (const auto& [one, split] : {std::pair{&plain, &plains[static_cast<size_t>(q)]},
                                         std::pair{&semi, &semis[static_cast<size_t>(q)]}}) {
          CHECK(split->assignment == one->assignment);
          CHECK(split->inertia == one->inertia);
          CHECK(split->iterations == one->iterations);
          CHECK(split->centres.to_vector<float>() == one->centres.to_vector<float>());
        }
      }
    }
  }
}

TEST_CASE("kmeans and semi_supervised_kmeans: a restart split over 2 to 9 ranks gives one process's result on every rank") {
  // 120 points of 8 dimensions; k below the number of blobs, so the iterations move points.
  const Blobs data = separated_blobs(6, 20, 8, 5);
  const auto [labelled, classes] = first_of_blobs(data, 2, 10);
  // Three locations and k = 4: two centres start on one location, and the empty cluster takes a
  // far point.
  const Tensor few = from_vector<float>({0, 0, 0, 0, 5, 5, 5, 5, 9, 9}, {5, 2});
  for (const int64_t rows_per_product : {int64_t{0}, int64_t{16}, int64_t{7}}) {  // 1, 8 and 18 products
    CAPTURE(rows_per_product);
    const KMeansOptions options{
        .k = 4, .restarts = 1, .max_iters = 50, .tol = 1e-4, .seed = 3, .rows_per_product = rows_per_product};
    const KMeansResult plain = kmeans(data.features, options);
    const KMeansResult semi = semi_supervised_kmeans(data.features, labelled, classes, options);
    // A warm start (GCD + MCDL's refit each epoch) from the centres of another seed.
    KMeansOptions other = options;
    other.seed = 11;
    const Tensor start = kmeans(data.features, other).centres;
    const KMeansResult warm = semi_supervised_kmeans(data.features, labelled, classes, options, start);
    const KMeansResult relocated = kmeans(few, {.k = 4, .restarts = 1, .max_iters = 20, .tol = 1e-4, .seed = 1,
                                                .rows_per_product = rows_per_product});
    REQUIRE(plain.iterations > 1);
    REQUIRE(warm.iterations > 1);
    for (const int ranks : {2, 3, 5, 9}) {  // 9: more ranks than dimensions and than products
      CAPTURE(ranks);
      const auto n = static_cast<size_t>(ranks);
      std::vector<KMeansResult> plains(n), semis(n), warms(n), relocateds(n);
      testing::ThreadWorld(ranks).run([&](Collective& world) {
        KMeansOptions split = options;
        split.world = &world;
        const auto r = static_cast<size_t>(world.rank());
        plains[r] = kmeans(data.features, split);
        semis[r] = semi_supervised_kmeans(data.features, labelled, classes, split);
        warms[r] = semi_supervised_kmeans(data.features, labelled, classes, split, start);
        relocateds[r] = kmeans(few, {.k = 4, .restarts = 1, .max_iters = 20, .tol = 1e-4, .seed = 1, .world = &world,
                                     .rows_per_product = rows_per_product});
      });
      for (size_t q = 0; q < n; ++q) {
        CAPTURE(q);
        for (const auto& [one, split] : {std::pair{&plain, &plains[q]}, std::pair{&semi, &semis[q]},
                                         std::pair{&warm, &warms[q]}, std::pair{&relocated, &relocateds[q]}}) {
          CHECK(split->assignment == one->assignment);
          CHECK(split->inertia == one->inertia);
          CHECK(split->iterations == one->iterations);
          CHECK(split->centres.to_vector<float>() == one->centres.to_vector<float>());
        }
      }
    }
  }
}
