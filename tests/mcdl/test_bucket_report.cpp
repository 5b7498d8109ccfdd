// The end-of-epoch bucket report (mcdl/method/bucket_report.h) on hand-made banks: the buckets'
// pseudo-label accuracy, the same numbers of samples chosen by confidence (the paper's premise
// measured), and the high bucket's make-up, on the CPU and the (emulated) CUDA device.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/ops.h"
#include "mcdl/method/bucket_report.h"
#include "tests/mcdl/hand_made_banks.h"

using namespace mcdl;

TEST_CASE("bucket report: consistency against confidence on the same numbers of samples, the high bucket's make-up") {
  for (Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device.str());
    // The hand-made banks (hand_made_banks.h), the first two clusters old: s0, s2, s3 high,
    // s1, s4 medium, s5 low.
    const testing::HandMadeBanks banks(device);
    const MemoryBank &weak = banks.weak, &strong = banks.strong;
    const std::vector<int64_t> truth = {0, 1, 1, 0, 2, 1}, identity = {0, 1, 2};
    const BucketReport r = bucket_report(weak, strong, 1, 2, truth, identity);
    CHECK(r.counts.high == 3);
    CHECK(r.counts.medium == 2);
    CHECK(r.counts.low == 1);
    CHECK(r.known_high == 3);
    CHECK(r.known_medium == 2);
    // High by the weak mode: s0 right, s2 wrong, s3 right. Medium by both banks' mean: s1 right
    // (0.4, 0.5, 0.1), s4 wrong (0.1, 0.525, 0.375).
    CHECK(r.high_accuracy == doctest::Approx(2.0 / 3.0));
    CHECK(r.medium_accuracy == doctest::Approx(0.5));
    // By confidence: s0, s4, s1 (right, wrong, right), then s2, s3 (wrong, right).
    CHECK(r.high_confidence_accuracy == doctest::Approx(2.0 / 3.0));
    CHECK(r.medium_confidence_accuracy == doctest::Approx(0.5));
    // The high bucket's pseudo-labels 0, 2, 0: two clusters, the largest 2/3, old 2/3.
    CHECK(r.high_clusters == 2);
    CHECK(r.high_top_share == doctest::Approx(2.0 / 3.0));
    CHECK(r.high_old_share == doctest::Approx(2.0 / 3.0));
    CHECK(r.bank_full == doctest::Approx(5.0 / 6.0));  // μ = 1: every sample with an entry

    // Unknown labels are left out of both selections: with s4's label unknown, the confidence
    // order of the known samples is s0, s1, s2 (right, right, wrong), then s3 alone.
    const BucketReport partial = bucket_report(weak, strong, 1, 2, {0, 1, 1, 0, -1, -1}, identity);
    CHECK(partial.known_high == 3);
    CHECK(partial.known_medium == 1);
    CHECK(partial.high_confidence_accuracy == doctest::Approx(2.0 / 3.0));
    CHECK(partial.medium_confidence_accuracy == doctest::Approx(1.0));

    // No labels: every accuracy is NaN; the make-up needs none.
    const BucketReport blind = bucket_report(weak, strong, 1, 2, std::vector<int64_t>(6, -1), identity);
    CHECK(std::isnan(blind.high_accuracy));
    CHECK(std::isnan(blind.high_confidence_accuracy));
    CHECK(blind.high_clusters == 2);

    MetricsRow row;
    append_bucket_columns(row, r);
    std::vector<std::string> names;
    for (const auto& [name, value] : row) names.push_back(name);
    CHECK(names == bucket_columns());
  }
}

TEST_CASE("bucket report: empty banks give zero counts and NaN shares") {
  MemoryBank weak(3, 2, 2), strong(3, 2, 2);
  const BucketReport r = bucket_report(weak, strong, 2, 1, {0, 1, 0}, {0, 1});
  CHECK(r.counts.low == 3);
  CHECK(r.high_clusters == 0);
  CHECK(std::isnan(r.high_top_share));
  CHECK(std::isnan(r.high_old_share));
  CHECK(std::isnan(r.high_confidence_accuracy));
  CHECK(r.bank_full == 0.0);
}
