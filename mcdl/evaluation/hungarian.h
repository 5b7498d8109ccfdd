// Exact linear assignment (the Hungarian problem) for dense double cost matrices, square or
// rectangular: the shortest augmenting path method of Crouse (2016), the algorithm behind
// scipy.optimize.linear_sum_assignment, O(n²·m). Its search order follows SciPy's (columns
// scanned from the last, ties broken towards a free column), so tied optima resolve as SciPy
// resolves them, which the GCD Old/New split depends on (docs/reference-facts.md §1.8).
#pragma once
#include <cstdint>
#include <vector>

namespace mcdl {

// cost is rows × cols, row-major. Returns col_for_row: the column assigned to each row, or −1
// for the rows left unassigned when rows > cols. Exactly min(rows, cols) pairs are made and
// their total cost is minimal (maximal with maximize = true). Throws on a size mismatch, NaN,
// or an entry that makes every complete assignment infinite (−inf when minimising, +inf
// when maximising), as SciPy does.
std::vector<int64_t> linear_sum_assignment(const std::vector<double>& cost, int64_t rows, int64_t cols,
                                           bool maximize = false);

// Σ cost[r, col_for_row[r]] over the assigned rows.
double assignment_total(const std::vector<double>& cost, int64_t cols, const std::vector<int64_t>& col_for_row);

}  // namespace mcdl
