#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/random.h"
#include "mcdl/evaluation/hungarian.h"
#include "tests/mcdl/eval_fixtures.h"

using namespace mcdl;

namespace {

// The best total over every one-to-one pairing of min(rows, cols) rows and columns.
double exhaustive_optimum(const std::vector<double>& cost, int64_t rows, int64_t cols, bool maximize) {
  const bool wide = rows <= cols;
  const int64_t small = wide ? rows : cols, large = wide ? cols : rows;
  auto at = [&](int64_t s, int64_t l) { return wide ? cost[s * cols + l] : cost[l * cols + s]; };
  double best = maximize ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  std::vector<char> used(static_cast<size_t>(large), 0);
  auto search = [&](auto&& self, int64_t s, double total) -> void {
    if (s == small) {
      best = maximize ? std::max(best, total) : std::min(best, total);
      return;
    }
    for (int64_t l = 0; l < large; ++l)
      if (!used[l]) {
        used[l] = 1;
        self(self, s + 1, total + at(s, l));
        used[l] = 0;
      }
  };
  search(search, 0, 0.0);
  return best;
}

// A valid answer: min(rows, cols) rows assigned, to distinct columns in range.
void check_is_matching(const std::vector<int64_t>& col_for_row, int64_t rows, int64_t cols) {
  REQUIRE(static_cast<int64_t>(col_for_row.size()) == rows);
  std::vector<char> used(static_cast<size_t>(cols), 0);
  int64_t assigned = 0;
  for (int64_t c : col_for_row) {
    if (c < 0) continue;
    REQUIRE(c < cols);
    CHECK_FALSE(used[c]);
    used[c] = 1;
    ++assigned;
  }
  CHECK(assigned == std::min(rows, cols));
}

}  // namespace

TEST_CASE("linear_sum_assignment: optimal against exhaustive search, square and rectangular, n ≤ 7") {
  RandomStream rng(7, stream_id("test_hungarian", {0}));
  for (int64_t rows = 1; rows <= 7; ++rows)
    for (int64_t cols = 1; cols <= 7; ++cols)
      for (int integer_costs = 0; integer_costs < 2; ++integer_costs)
        for (int maximize = 0; maximize < 2; ++maximize) {
          // Small integer costs produce many tied optima: only the totals must agree.
          std::vector<double> cost(static_cast<size_t>(rows * cols));
          for (double& c : cost) c = integer_costs ? static_cast<double>(rng.randint(0, 4)) : rng.uniform(-5, 5);
          CAPTURE(rows);
          CAPTURE(cols);
          CAPTURE(maximize);
          const std::vector<int64_t> col_for_row = linear_sum_assignment(cost, rows, cols, maximize);
          check_is_matching(col_for_row, rows, cols);
          CHECK(assignment_total(cost, cols, col_for_row) ==
                doctest::Approx(exhaustive_optimum(cost, rows, cols, maximize)).epsilon(1e-12));
        }
}

TEST_CASE("linear_sum_assignment: the same pairs as scipy.optimize.linear_sum_assignment") {
  mcdl::testing::EvalFixture fixture("hungarian.txt");
  int cases = 0;
  while (fixture.good()) {
    const auto rows = fixture.next<int64_t>(), cols = fixture.next<int64_t>();
    const bool maximize = fixture.next<int>() != 0;
    const auto cost = fixture.next<double>(rows * cols);
    const auto total = fixture.next<double>();
    const auto expected = fixture.next<int64_t>(rows);
    CAPTURE(rows);
    CAPTURE(cols);
    CAPTURE(maximize);
    const std::vector<int64_t> col_for_row = linear_sum_assignment(cost, rows, cols, maximize);
    CHECK(col_for_row == expected);
    CHECK(assignment_total(cost, cols, col_for_row) == doctest::Approx(total).epsilon(1e-12));
    ++cases;
  }
  CHECK(cases == 22);
}

TEST_CASE("linear_sum_assignment: SciPy's tie-breaking on a constant matrix and small cases") {
  // SciPy returns the identity for a constant matrix (scipy issue #11602).
  CHECK(linear_sum_assignment(std::vector<double>(16, 3.0), 4, 4) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(linear_sum_assignment(std::vector<double>(6, 1.0), 2, 3) == std::vector<int64_t>{0, 1});
  CHECK(linear_sum_assignment(std::vector<double>(6, 1.0), 3, 2) == std::vector<int64_t>{0, 1, -1});
  // scipy: linear_sum_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]]) → cols [1, 0, 2], total 3.
  const std::vector<double> cost = {4, 1, 3, 2, 0, 5, 3, 2, 2};
  CHECK(linear_sum_assignment(cost, 3, 3) == std::vector<int64_t>{1, 0, 2});
  // maximize=True → cols [0, 2, 1], total 4 + 5 + 2 = 11.
  CHECK(linear_sum_assignment(cost, 3, 3, true) == std::vector<int64_t>{0, 2, 1});
  CHECK(linear_sum_assignment({}, 0, 0).empty());
  CHECK(linear_sum_assignment({}, 2, 0) == std::vector<int64_t>{-1, -1});
  // +inf is allowed while a finite assignment exists.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(linear_sum_assignment({inf, 1, 2, inf}, 2, 2) == std::vector<int64_t>{1, 0});
}

TEST_CASE("linear_sum_assignment: errors name the problem") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(linear_sum_assignment({1, 2, 3}, 2, 2), doctest::Contains("3 costs do not form a 2×2 matrix"));
  CHECK_THROWS_WITH(linear_sum_assignment({1, std::nan(""), 3, 4}, 2, 2), doctest::Contains("cost[0, 1]"));
  CHECK_THROWS_WITH(linear_sum_assignment({1, -inf, 3, 4}, 2, 2), doctest::Contains("is invalid"));
  CHECK_THROWS_WITH(linear_sum_assignment({1, inf, 3, 4}, 2, 2, true), doctest::Contains("is invalid"));
  CHECK_THROWS_WITH(linear_sum_assignment({inf, inf, 3, 4}, 2, 2), doctest::Contains("infeasible"));
}

TEST_CASE("linear_sum_assignment: a 300×300 problem is solved quickly and beats greedy pairings") {
  RandomStream rng(11, stream_id("test_hungarian", {1}));
  const int64_t n = 300;
  std::vector<double> cost(static_cast<size_t>(n * n));
  for (double& c : cost) c = rng.uniform(0, 1);
  const std::vector<int64_t> col_for_row = linear_sum_assignment(cost, n, n);
  check_is_matching(col_for_row, n, n);
  const double total = assignment_total(cost, n, col_for_row);
  // The identity pairing and the row-greedy pairing can only be worse.
  double identity = 0.0, greedy = 0.0;
  std::vector<char> used(static_cast<size_t>(n), 0);
  for (int64_t r = 0; r < n; ++r) {
    identity += cost[r * n + r];
    int64_t best = -1;
    for (int64_t c = 0; c < n; ++c)
      if (!used[c] && (best < 0 || cost[r * n + c] < cost[r * n + best])) best = c;
    used[best] = 1;
    greedy += cost[r * n + best];
  }
  CHECK(total <= identity);
  CHECK(total <= greedy);
  // The optimum of n uniform costs is about ζ(2) ≈ 1.64 for large n.
  CHECK(total < 2.5);
}
