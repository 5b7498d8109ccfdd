#include "mcdl/evaluation/tsne.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/error.h"
#include "engine/parallel.h"
#include "engine/random.h"

namespace mcdl {
namespace {

// The cost parallel_rows weighs for a row of the O(N²) loops, which run once per iteration: below
// 512 points a parallel region costs more than the row (a thousand regions per embedding).
int64_t row_cost(int64_t n) { return n >= 512 ? n : 1; }

std::vector<double> squared_distances(const std::vector<double>& x, int64_t n, int64_t d) {
  std::vector<double> out(static_cast<size_t>(n * n));
  parallel_rows(n, n * d, [&](int64_t i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t c = 0; c < d; ++c) {
        const double diff = x[static_cast<size_t>(i * d + c)] - x[static_cast<size_t>(j * d + c)];
        s += diff * diff;
      }
      out[static_cast<size_t>(i * n + j)] = s;
    }
  });
  return out;
}

// Row i of the conditional affinities P(j|i) with the bandwidth whose entropy is log(perplexity).
void conditional_row(const double* distances, int64_t n, int64_t i, double perplexity, double* p) {
  const double target = std::log(perplexity);
  double beta = 1.0, low = 0.0, high = INFINITY;
  for (int step = 0; step < 100; ++step) {
    double sum = 0.0, weighted = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      p[j] = j == i ? 0.0 : std::exp(-distances[j] * beta);
      sum += p[j];
      weighted += distances[j] * p[j];
    }
    sum = std::max(sum, 1e-300);
    const double entropy = std::log(sum) + beta * weighted / sum;
    for (int64_t j = 0; j < n; ++j) p[j] /= sum;
    if (std::abs(entropy - target) < 1e-5) return;
    if (entropy > target) {  // too flat: narrower
      low = beta;
      beta = std::isinf(high) ? beta * 2.0 : 0.5 * (beta + high);
    } else {
      high = beta;
      beta = 0.5 * (beta + low);
    }
  }
}

}  // namespace

std::vector<double> tsne_2d(const std::vector<double>& x, int64_t n, int64_t d, const TsneOptions& options) {
  check(n >= 2 && static_cast<int64_t>(x.size()) == n * d, "tsne_2d: expected ", n, " rows of ", d, " values");
  check(options.perplexity > 0 && options.perplexity < static_cast<double>(n), "tsne_2d: perplexity ",
        options.perplexity, " must be below the number of points ", n);
  const std::vector<double> distances = squared_distances(x, n, d);
  std::vector<double> p(static_cast<size_t>(n * n));
  parallel_rows(n, n * 30, [&](int64_t i) {
    conditional_row(distances.data() + i * n, n, i, options.perplexity, p.data() + i * n);
  });
  std::vector<double> joint(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      joint[static_cast<size_t>(i * n + j)] =
          std::max((p[static_cast<size_t>(i * n + j)] + p[static_cast<size_t>(j * n + i)]) / (2.0 * n), 1e-12);

  RandomStream stream(options.seed, stream_id("tsne"));
  std::vector<double> y(static_cast<size_t>(2 * n)), update(y.size(), 0.0), gains(y.size(), 1.0),
      gradient(y.size());
  for (double& v : y) v = 1e-4 * stream.normal();
  const double exaggeration = 12.0, rate = std::max(static_cast<double>(n) / exaggeration / 4.0, 50.0);
  // The layout by coordinate (contiguous loads in the row loop) and each row's sums.
  std::vector<double> first(static_cast<size_t>(n)), second(static_cast<size_t>(n)), row_z(static_cast<size_t>(n)),
      attraction(y.size()), repulsion(y.size());
  for (int64_t it = 0; it < options.iterations; ++it) {
    for (int64_t i = 0; i < n; ++i) first[i] = y[static_cast<size_t>(2 * i)], second[i] = y[static_cast<size_t>(2 * i + 1)];
    // The gradient 4·Σ_j (E·p_ij − s_ij/Z)·s_ij·(y_i − y_j), s_ij = 1/(1 + |y_i − y_j|²), Z = Σ_{i≠j} s_ij,
    // split as 4·(E·Σ_j p_ij·s_ij·(y_i − y_j) − Σ_j s_ij²·(y_i − y_j) / Z): one pass over the pairs
    // gives both sums and Z's rows (the j = i term adds s = 1 to Z's row and nothing to the others).
    parallel_rows(n, row_cost(n), [&](int64_t i) {
      const double* p_row = joint.data() + i * n;
      const double xi = first[i], yi = second[i];
      // Four interleaved partial sums per quantity (lane l takes j ≡ l mod 4), so that the loop
      // vectorizes; the lanes are added in a fixed order.
      constexpr int64_t lanes = 4;
      double z[lanes] = {}, ax[lanes] = {}, ay[lanes] = {}, rx[lanes] = {}, ry[lanes] = {};
      auto add = [&](int64_t l, int64_t j) {
        const double dx = xi - first[j], dy = yi - second[j];
        const double s = 1.0 / (1.0 + dx * dx + dy * dy), ps = p_row[j] * s, ss = s * s;
        z[l] += s;
        ax[l] += ps * dx, ay[l] += ps * dy;
        rx[l] += ss * dx, ry[l] += ss * dy;
      };
      int64_t j = 0;
      for (; j + lanes <= n; j += lanes)
        for (int64_t l = 0; l < lanes; ++l) add(l, j + l);
      for (; j < n; ++j) add(j % lanes, j);
      auto total = [](const double* v) { return (v[0] + v[1]) + (v[2] + v[3]); };
      row_z[static_cast<size_t>(i)] = total(z) - 1.0;
      attraction[static_cast<size_t>(2 * i)] = total(ax), attraction[static_cast<size_t>(2 * i + 1)] = total(ay);
      repulsion[static_cast<size_t>(2 * i)] = total(rx), repulsion[static_cast<size_t>(2 * i + 1)] = total(ry);
    });
    const bool early = it < 250;
    const double z = std::accumulate(row_z.begin(), row_z.end(), 0.0), scale = early ? exaggeration : 1.0;
    const double momentum = early ? 0.5 : 0.8;
    for (size_t c = 0; c < y.size(); ++c) {
      gradient[c] = 4.0 * (scale * attraction[c] - repulsion[c] / z);
      // Delta-bar-delta: a coordinate whose gradient keeps its sign against the last step speeds up.
      gains[c] = (gradient[c] > 0) != (update[c] > 0) ? gains[c] + 0.2 : std::max(gains[c] * 0.8, 0.01);
      update[c] = momentum * update[c] - rate * gains[c] * gradient[c];
      y[c] += update[c];
    }
  }
  return y;
}

double trustworthiness(const std::vector<double>& x, int64_t dx, const std::vector<double>& y, int64_t dy,
                       int64_t n, int64_t k) {
  check(k >= 1 && 2 * n - 3 * k - 1 > 0, "trustworthiness: k = ", k, " is too large for ", n, " points");
  const std::vector<double> in_x = squared_distances(x, n, dx), in_y = squared_distances(y, n, dy);
  double penalty = 0.0;
  std::vector<int64_t> order(static_cast<size_t>(n)), rank(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto by = [&](const std::vector<double>& dist) {
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        if (a == i || b == i) return a == i && b != i;  // the point itself first (rank 0)
        return dist[static_cast<size_t>(i * n + a)] < dist[static_cast<size_t>(i * n + b)];
      });
    };
    by(in_x);
    for (int64_t r = 0; r < n; ++r) rank[static_cast<size_t>(order[static_cast<size_t>(r)])] = r;
    by(in_y);
    for (int64_t r = 1; r <= k; ++r) penalty += std::max<int64_t>(0, rank[static_cast<size_t>(order[static_cast<size_t>(r)])] - k);
  }
  return 1.0 - 2.0 / (static_cast<double>(n) * k * (2.0 * n - 3.0 * k - 1.0)) * penalty;
}

}  // namespace mcdl
