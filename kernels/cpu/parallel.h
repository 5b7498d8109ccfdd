// OpenMP helpers for the CPU kernels. Element-wise loops split statically; reductions
// combine fixed-size chunks in a fixed order, so results do not depend on the thread count.
#pragma once
#include <cstdint>
#include <vector>

namespace mcdl::cpu {

// Below this many elements a loop runs on one thread: the fork costs more than it saves.
constexpr int64_t parallel_grain = 16384;

template <class F>
void parallel_for(int64_t n, F&& body) {
#pragma omp parallel for schedule(static) if (n >= parallel_grain)
  for (int64_t i = 0; i < n; ++i) body(i);
}

// Parallel over `rows` independent rows, where each row costs about `row_cost` elements.
template <class F>
void parallel_rows(int64_t rows, int64_t row_cost, F&& body) {
#pragma omp parallel for schedule(static) if (rows * row_cost >= parallel_grain && rows > 1)
  for (int64_t r = 0; r < rows; ++r) body(r);
}

// body(begin, count) for consecutive blocks of `block` elements of [0, n) (the last one shorter),
// the blocks split over the threads: for loops whose body works on a whole array span.
template <class F>
void parallel_blocks(int64_t n, int64_t block, F&& body) {
  parallel_rows((n + block - 1) / block, block, [&](int64_t b) {
    const int64_t begin = b * block;
    body(begin, n - begin < block ? n - begin : block);
  });
}

// Sum of term(i) for i in [0, n) in double: chunks of a fixed size are summed in parallel,
// then the partial sums are added in chunk order (deterministic for any thread count).
template <class F>
double deterministic_sum(int64_t n, F&& term) {
  constexpr int64_t chunk = 4096;
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
#pragma omp parallel for schedule(static) if (n >= parallel_grain)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0.0;
    const int64_t end = (c + 1) * chunk < n ? (c + 1) * chunk : n;
    for (int64_t i = c * chunk; i < end; ++i) s += term(i);
    partial[static_cast<size_t>(c)] = s;
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace mcdl::cpu
