#include "mcdl/tsne.h"

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
  std::vector<double> similarity(static_cast<size_t>(n * n));
  for (int64_t it = 0; it < options.iterations; ++it) {
    const bool early = it < 250;
    parallel_rows(n, row_cost(n), [&](int64_t i) {
      for (int64_t j = 0; j < n; ++j) {
        const double dx = y[static_cast<size_t>(2 * i)] - y[static_cast<size_t>(2 * j)];
        const double dy = y[static_cast<size_t>(2 * i + 1)] - y[static_cast<size_t>(2 * j + 1)];
        similarity[static_cast<size_t>(i * n + j)] = i == j ? 0.0 : 1.0 / (1.0 + dx * dx + dy * dy);
      }
    });
    const double z = std::accumulate(similarity.begin(), similarity.end(), 0.0);
    parallel_rows(n, row_cost(n), [&](int64_t i) {
      double gx = 0, gy = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double s = similarity[static_cast<size_t>(i * n + j)];
        const double force = ((early ? exaggeration : 1.0) * joint[static_cast<size_t>(i * n + j)] - s / z) * s;
        gx += force * (y[static_cast<size_t>(2 * i)] - y[static_cast<size_t>(2 * j)]);
        gy += force * (y[static_cast<size_t>(2 * i + 1)] - y[static_cast<size_t>(2 * j + 1)]);
      }
      gradient[static_cast<size_t>(2 * i)] = 4.0 * gx;
      gradient[static_cast<size_t>(2 * i + 1)] = 4.0 * gy;
    });
    const double momentum = early ? 0.5 : 0.8;
    for (size_t c = 0; c < y.size(); ++c) {
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
