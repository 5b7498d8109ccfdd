// The class-balanced high bucket (mcdl/method/class_cap.h): the quota, which high samples a cap
// demotes (the least confident of an over-full pseudo-label, ties by slot), its bad inputs, and
// the same read from hand-made banks on the CPU and the (emulated) CUDA device.
#include <doctest/doctest.h>

#include "engine/ops.h"
#include "mcdl/method/class_cap.h"
#include "tests/mcdl/hand_made_banks.h"

using namespace mcdl;

TEST_CASE("class cap: the quota is the cap times a uniform prior's share, at least one") {
  CHECK(class_cap_quota(1.0, 2250, 100) == 22);
  CHECK(class_cap_quota(2.0, 2250, 100) == 45);
  CHECK(class_cap_quota(0.01, 2250, 100) == 1);
  CHECK_THROWS_WITH(class_cap_quota(0.0, 10, 2), doctest::Contains("positive cap"));
  CHECK_THROWS_WITH(class_cap_quota(1.0, 10, 0), doctest::Contains("positive cap"));
}

TEST_CASE("class cap: an over-full pseudo-label keeps its most confident high samples, ties by the lower slot") {
  // Pseudo-label 1 holds slots 0, 3, 5 (confidence .9, .5, .7), label 2 slots 7, 9.
  const std::vector<int64_t> slots = {0, 3, 5, 7, 9}, labels = {1, 1, 1, 2, 2};
  std::vector<uint8_t> demoted = class_cap_demotions(slots, labels, {0.9f, 0.5f, 0.7f, 0.1f, 0.2f}, 10, 2);
  CHECK(demoted == std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  demoted = class_cap_demotions(slots, labels, {0.9f, 0.5f, 0.7f, 0.1f, 0.2f}, 10, 1);
  CHECK(demoted == std::vector<uint8_t>{0, 0, 0, 1, 0, 1, 0, 1, 0, 0});  // 2 keeps slot 9 (.2 > .1)
  demoted = class_cap_demotions(slots, labels, {0.5f, 0.5f, 0.5f, 0.3f, 0.3f}, 10, 1);
  CHECK(demoted == std::vector<uint8_t>{0, 0, 0, 1, 0, 1, 0, 0, 0, 1});  // equal: the lower slot stays
  CHECK(class_cap_demotions(slots, labels, {0.9f, 0.5f, 0.7f, 0.1f, 0.2f}, 10, 3) == std::vector<uint8_t>(10, 0));
  CHECK(class_cap_demotions({}, {}, {}, 4, 1) == std::vector<uint8_t>(4, 0));
  CHECK_THROWS_WITH(class_cap_demotions({0, 10}, {1, 1}, {0.5f, 0.5f}, 10, 1), doctest::Contains("outside 0..9"));
  CHECK_THROWS_WITH(class_cap_demotions({0, 1}, {1}, {0.5f, 0.5f}, 10, 1), doctest::Contains("pseudo-labels"));
}

TEST_CASE("class cap: drawn from the banks, the weak bank's mean probability ranks a label's high samples") {
  for (Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device.str());
    // The hand-made banks (hand_made_banks.h): s0 (pseudo-label 0, p .9), s2 (2, .6) and s3
    // (0, .4) are high.
    const testing::HandMadeBanks banks(device);
    const MemoryBank &weak = banks.weak, &strong = banks.strong;
    // Cap 0.5: a label keeps ⌊0.5 · 6 / 3⌋ = 1 high sample, so label 0 drops s3 (.4 < .9).
    CHECK(class_cap_demotions(weak, strong, 1, 0.5) == std::vector<uint8_t>{0, 0, 0, 1, 0, 0});
    CHECK(class_cap_demotions(weak, strong, 1, 1.0) == std::vector<uint8_t>(6, 0));
  }
}
