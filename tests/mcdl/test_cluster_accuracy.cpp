#include <doctest/doctest.h>

#include <cmath>

#include "mcdl/evaluation/cluster_accuracy.h"
#include "tests/mcdl/eval_fixtures.h"

using namespace mcdl;

namespace {
void check_accuracy(const ClusterAccuracy& got, const std::vector<double>& expected) {
  CHECK(got.all == doctest::Approx(expected[0]).epsilon(1e-12));
  CHECK(got.old_classes == doctest::Approx(expected[1]).epsilon(1e-12));
  CHECK(got.new_classes == doctest::Approx(expected[2]).epsilon(1e-12));
}
}  // namespace

TEST_CASE("split_cluster_acc v1/v2/v2b and the v2 map equal the GCD/SimGCD reference (fixtures)") {
  mcdl::testing::EvalFixture fixture("cluster_acc.txt");
  int cases = 0;
  while (fixture.good()) {
    const auto n = fixture.next<int64_t>();
    const auto y_true = fixture.next<int64_t>(n), y_pred = fixture.next<int64_t>(n);
    const auto mask_ints = fixture.next<int>(n);
    const std::vector<bool> is_old(mask_ints.begin(), mask_ints.end());
    const auto v1 = fixture.next<double>(3), v2 = fixture.next<double>(3), v2b = fixture.next<double>(3);
    CAPTURE(n);
    check_accuracy(split_cluster_acc_v1(y_true, y_pred, is_old), v1);
    check_accuracy(split_cluster_acc_v2(y_true, y_pred, is_old), v2);
    check_accuracy(split_cluster_acc_v2b(y_true, y_pred, is_old), v2b);
    const std::vector<int64_t> class_to_cluster = v2_class_to_cluster(y_true, y_pred);
    CHECK(class_to_cluster == fixture.next<int64_t>(static_cast<int64_t>(class_to_cluster.size())));
    ++cases;
  }
  CHECK(cases == 10);
}

TEST_CASE("split_cluster_acc: hand cases") {
  // Clusters are a relabelling of the classes: every accuracy is 1.
  const std::vector<int64_t> y_true = {0, 0, 1, 1, 2, 2, 3}, perfect = {2, 2, 0, 0, 3, 3, 1};
  const std::vector<bool> is_old = old_mask_from_class_count(y_true, 2);
  CHECK(is_old == std::vector<bool>{true, true, true, true, false, false, false});
  for (const ClusterAccuracy& acc : {split_cluster_acc_v1(y_true, perfect, is_old),
                                     split_cluster_acc_v2(y_true, perfect, is_old),
                                     split_cluster_acc_v2b(y_true, perfect, is_old)}) {
    CHECK(acc.all == 1.0);
    CHECK(acc.old_classes == 1.0);
    CHECK(acc.new_classes == 1.0);
  }
  CHECK(v2_assignment(y_true, perfect) == std::vector<int64_t>{1, 3, 0, 2});
  CHECK(v2_class_to_cluster(y_true, perfect) == std::vector<int64_t>{2, 0, 3, 1});

  // One cluster for old class 0 and new class 2: v2 gives it to one of them (both have 2
  // samples; class 0 wins here), v1 matches each subset separately and credits both.
  const std::vector<int64_t> truth = {0, 0, 1, 1, 2, 2}, pred = {0, 0, 1, 1, 0, 0};
  const std::vector<bool> old = old_mask_from_classes(truth, {0, 1});
  const ClusterAccuracy v1 = split_cluster_acc_v1(truth, pred, old);
  CHECK(v1.all == 1.0);
  const ClusterAccuracy v2 = split_cluster_acc_v2(truth, pred, old);
  CHECK(v2.all == doctest::Approx(4.0 / 6.0));
  CHECK(v2.old_classes + v2.new_classes == doctest::Approx(1.0));  // 1 and 0, or 0.5 and 0.5
  // v2b: per class, averaged (classes 0 and 1 old, class 2 new).
  const ClusterAccuracy v2b = split_cluster_acc_v2b({0, 0, 0, 0, 1, 2, 2}, {0, 0, 0, 1, 1, 2, 2}, {1, 1, 1, 1, 1, 0, 0});
  CHECK(v2b.old_classes == doctest::Approx((0.75 + 1.0) / 2));
  CHECK(v2b.new_classes == 1.0);
  CHECK(v2b.all == doctest::Approx((0.75 + 1.0 + 1.0) / 3));
}

TEST_CASE("split_cluster_acc: an empty Old or New subset gives NaN there, where the reference raises") {
  const std::vector<int64_t> y_true = {0, 1, 1}, y_pred = {1, 0, 0};
  const std::vector<bool> none_old(3, false);
  for (const ClusterAccuracy& acc : {split_cluster_acc_v1(y_true, y_pred, none_old),
                                     split_cluster_acc_v2(y_true, y_pred, none_old),
                                     split_cluster_acc_v2b(y_true, y_pred, none_old)}) {
    CHECK(std::isnan(acc.old_classes));
    CHECK(acc.new_classes == 1.0);
    CHECK(acc.all == 1.0);
  }
}

TEST_CASE("split_cluster_acc: errors name the function and the sizes") {
  CHECK_THROWS_WITH(split_cluster_acc_v2({0, 1}, {0}, {true, false}),
                    doctest::Contains("split_cluster_acc_v2: 2 labels but 1 predictions"));
  CHECK_THROWS_WITH(split_cluster_acc_v1({0, 1}, {0, -1}, {true, false}),
                    doctest::Contains("split_cluster_acc_v1: sample 1 has label 1 and prediction -1"));
  CHECK_THROWS_WITH(split_cluster_acc_v2b({0, 1}, {0, 1}, {true}),
                    doctest::Contains("split_cluster_acc_v2b: the old-class mask has 1 entries for 2 samples"));
  CHECK_THROWS_WITH(split_cluster_acc_v2({}, {}, {}), doctest::Contains("no samples"));
  CHECK_THROWS_WITH(v2_assignment({0}, {0, 1}), doctest::Contains("1 labels but 2 predictions"));
}
