// NumPy legacy RandomState and CPython set order, bit for bit against
// tests/fixtures/splits/{numpy_choice,set_difference}.txt (tools/make_split_fixtures.py).
#include <doctest/doctest.h>

#include <algorithm>

#include "data/numpy_random.h"
#include "data/python_set_order.h"
#include "engine/error.h"
#include "tests/data/split_fixtures.h"

using namespace mcdl;
using namespace mcdl::test;

TEST_CASE("numpy legacy seeding is init_genrand: the state after np.random.seed(0)") {
  // np.random.seed(0); np.random.get_state()[1][:4] == [0, 1, 1812433255, 1900727105]; the
  // first output of seed 0 is 2357136044 (np.random.randint(2**32, dtype=np.uint32) agrees).
  NumpyLegacyRandom random(0);
  CHECK(random.next_uint32() == 2357136044u);
  CHECK(random.next_uint64() == ((uint64_t{2546248239u} << 32) | 3071714933u));
}

TEST_CASE("numpy random_interval stays in [0, max] and handles the edges") {
  NumpyLegacyRandom random(3);
  CHECK(random.random_interval(0) == 0);
  for (uint64_t max : {1ULL, 2ULL, 5ULL, 1000ULL, 0xffffffffULL, 0x1ffffffffULL})
    for (int k = 0; k < 50; ++k) CHECK(random.random_interval(max) <= max);
}

TEST_CASE("numpy choice(range(n), size, replace=False) matches numpy 1.24 bit for bit") {
  int cases = 0;
  for (const FixtureLine& line : read_split_fixture("numpy_choice.txt")) {
    if (line.key.rfind("choice ", 0) != 0) continue;
    const std::vector<int64_t> args = parse_ints(line.key.substr(7));
    REQUIRE(args.size() == 3);
    CAPTURE(line.key);
    const auto drawn = numpy_legacy_choice_without_replacement(static_cast<uint32_t>(args[0]), args[1], args[2]);
    CHECK(matches(drawn, parse_summary(line.rest)));
    ++cases;
  }
  CHECK(cases == 11);
}

TEST_CASE("ImageNet-100 classes: np.random.seed(0); sorted(choice(1000, 100, replace=False))") {
  for (const FixtureLine& line : read_split_fixture("numpy_choice.txt")) {
    if (line.key != "imagenet100") continue;
    auto classes = numpy_legacy_choice_without_replacement(0, 1000, 100);
    std::sort(classes.begin(), classes.end());
    CHECK(classes == parse_ints(line.rest));
    // GCD issue #12's list starts n01443537, n01537544: ImageNet synset indices 1 and 14.
    CHECK(classes[0] == 1);
    CHECK(classes[1] == 14);
    return;
  }
  FAIL("imagenet100 line missing from numpy_choice.txt");
}

TEST_CASE("numpy choice rejects a sample larger than the population") {
  CHECK_THROWS_WITH(numpy_legacy_choice_without_replacement(0, 5, 6), doctest::Contains("population of 5"));
  CHECK_THROWS_WITH(numpy_legacy_choice_without_replacement(0, -1, 0), doctest::Contains("negative"));
}

TEST_CASE("CPython set difference order matches python 3.11, both code paths and wrap-around") {
  int cases = 0;
  for (const FixtureLine& line : read_split_fixture("set_difference.txt")) {
    const std::vector<int64_t> args = parse_ints(line.key.substr(8));
    REQUIRE(args.size() == 2);
    CAPTURE(line.key);
    NumpyLegacyRandom random(0);
    std::vector<int64_t> removed = random.permutation(args[0]);
    removed.resize(static_cast<size_t>(args[1]));
    CHECK(matches(python_set_difference_order(args[0], removed), parse_summary(line.rest)));
    ++cases;
  }
  CHECK(cases == 16);
}

TEST_CASE("python_set_difference_order rejects values outside [0, n) and repeats") {
  CHECK_THROWS_WITH(python_set_difference_order(4, {4}), doctest::Contains("outside [0, 4)"));
  CHECK_THROWS_WITH(python_set_difference_order(4, {1, 1}), doctest::Contains("repeats"));
}
