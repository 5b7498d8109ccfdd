#include "mcdl/evaluation/hungarian.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/error.h"

namespace mcdl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The state of the shortest augmenting path search on a wide (rows ≤ cols) problem.
struct AugmentingSearch {
  int64_t rows, cols;
  const std::vector<double>& cost;
  std::vector<double> u, v;               // dual variables of rows and columns
  std::vector<double> shortest_path_cost; // per column, in the current search
  std::vector<int64_t> path;              // per column: the row it was reached from
  std::vector<int64_t> col_for_row, row_for_col;
  std::vector<char> row_visited, col_visited;
  std::vector<int64_t> remaining;         // columns not yet reached in the current search

  AugmentingSearch(const std::vector<double>& c, int64_t r, int64_t n)
      : rows(r), cols(n), cost(c), u(r, 0.0), v(n, 0.0), shortest_path_cost(n), path(n, -1), col_for_row(r, -1),
        row_for_col(n, -1), row_visited(r), col_visited(n), remaining(n) {}

  // Dijkstra from free row `row` over reduced costs until it reaches a free column (the
  // sink). Returns the sink, or −1 when only infinite paths remain; min_value receives the
  // length of the shortest path.
  int64_t find_sink(int64_t row, double& min_value) {
    min_value = 0.0;
    int64_t num_remaining = cols;
    // Filled in reverse, as SciPy does, so that a constant matrix gives the identity.
    for (int64_t it = 0; it < cols; ++it) remaining[it] = cols - it - 1;
    std::fill(row_visited.begin(), row_visited.end(), 0);
    std::fill(col_visited.begin(), col_visited.end(), 0);
    std::fill(shortest_path_cost.begin(), shortest_path_cost.end(), kInf);
    int64_t i = row;
    while (true) {
      int64_t best_index = -1;
      double lowest = kInf;
      row_visited[i] = 1;
      for (int64_t it = 0; it < num_remaining; ++it) {
        const int64_t j = remaining[it];
        const double reduced = min_value + cost[i * cols + j] - u[i] - v[j];
        if (reduced < shortest_path_cost[j]) {
          path[j] = i;
          shortest_path_cost[j] = reduced;
        }
        // Among equal lengths prefer a free column: it ends the search (SciPy's rule, which
        // matters for integer matrices such as contingency tables).
        if (shortest_path_cost[j] < lowest || (shortest_path_cost[j] == lowest && row_for_col[j] == -1)) {
          lowest = shortest_path_cost[j];
          best_index = it;
        }
      }
      min_value = lowest;
      if (min_value == kInf) return -1;
      const int64_t j = remaining[best_index];
      col_visited[j] = 1;
      remaining[best_index] = remaining[--num_remaining];
      if (row_for_col[j] == -1) return j;
      i = row_for_col[j];
    }
  }

  void solve() {
    for (int64_t current = 0; current < rows; ++current) {
      double min_value = 0.0;
      const int64_t sink = find_sink(current, min_value);
      check(sink >= 0, "linear_sum_assignment: the cost matrix is infeasible (no assignment of finite cost)");
      u[current] += min_value;
      for (int64_t i = 0; i < rows; ++i)
        if (row_visited[i] && i != current) u[i] += min_value - shortest_path_cost[col_for_row[i]];
      for (int64_t j = 0; j < cols; ++j)
        if (col_visited[j]) v[j] -= min_value - shortest_path_cost[j];
      // Flip the matching along the path from the sink back to the current row.
      int64_t j = sink;
      while (true) {
        const int64_t i = path[j];
        row_for_col[j] = i;
        std::swap(col_for_row[i], j);
        if (i == current) break;
      }
    }
  }
};

}  // namespace

std::vector<int64_t> linear_sum_assignment(const std::vector<double>& cost, int64_t rows, int64_t cols,
                                           bool maximize) {
  check(rows >= 0 && cols >= 0 && static_cast<int64_t>(cost.size()) == rows * cols, "linear_sum_assignment: ",
        cost.size(), " costs do not form a ", rows, "×", cols, " matrix");
  if (rows == 0 || cols == 0) return std::vector<int64_t>(static_cast<size_t>(rows), -1);
  // The search needs rows ≤ cols: a tall matrix is solved transposed (as SciPy does).
  const bool transposed = cols < rows;
  const int64_t r = transposed ? cols : rows, c = transposed ? rows : cols;
  std::vector<double> work(cost.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double value = maximize ? -cost[i * cols + j] : cost[i * cols + j];
      check(!std::isnan(value) && value != -kInf, "linear_sum_assignment: cost[", i, ", ", j, "] = ",
            cost[i * cols + j], " is invalid (NaN, or an infinity in the optimised direction)");
      work[transposed ? j * c + i : i * c + j] = value;
    }
  AugmentingSearch search(work, r, c);
  search.solve();
  if (!transposed) return search.col_for_row;
  std::vector<int64_t> col_for_row(static_cast<size_t>(rows), -1);
  for (int64_t j = 0; j < r; ++j) col_for_row[search.col_for_row[j]] = j;
  return col_for_row;
}

double assignment_total(const std::vector<double>& cost, int64_t cols, const std::vector<int64_t>& col_for_row) {
  double total = 0.0;
  for (size_t r = 0; r < col_for_row.size(); ++r)
    if (col_for_row[r] >= 0) total += cost[r * static_cast<size_t>(cols) + static_cast<size_t>(col_for_row[r])];
  return total;
}

}  // namespace mcdl
