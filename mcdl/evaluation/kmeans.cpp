#include "mcdl/evaluation/kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "engine/ops/indexing.h"
#include "engine/parallel.h"
#include "engine/random.h"
#include "mcdl/evaluation/kmeans_points.h"

namespace mcdl {
namespace {

using kmeans_detail::Centres;
using kmeans_detail::Points;
using kmeans_detail::share_sizes;
using kmeans_detail::Split;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Exact ‖x_i − c_{labels[i]}‖² in double for every point, each sum in element order (the same
// bits on either device). Split, each rank computes those of its share of the points.
std::vector<double> assigned_distances(const Points& points, const std::vector<int64_t>& labels,
                                       const Centres& centres, const Split& split) {
  const std::vector<std::pair<int64_t, int64_t>> shares = split.shares(points.size());
  const auto [first, last] = split.own(shares);
  return split.gathered(points.assigned_distances(labels, centres, first, last), share_sizes(shares));
}

double ordered_sum(const std::vector<double>& values) {
  return deterministic_sum(static_cast<int64_t>(values.size()), [&](int64_t i) { return values[i]; });
}

// k-means++ over `points`, starting from `initial` (may be empty: then the first centre is a
// uniformly drawn point). Each further centre: `trials` candidates drawn with probability
// ∝ D² (the first point whose cumulative D² reaches u·Σ D², as sklearn's searchsorted and
// GCD's kpp), keeping the candidate with the lowest resulting potential.
Centres kmeans_plus_plus(const Points& points, Centres initial, int64_t k, int64_t trials, RandomStream& rng) {
  const int64_t n = points.size(), dim = points.dim();
  Centres centres = std::move(initial);
  centres.dim = dim;
  auto append_point = [&](int64_t i) {
    const float* x = points.row(i);
    centres.values.insert(centres.values.end(), x, x + dim);
    ++centres.k;
  };
  if (centres.k == 0) append_point(rng.randint(0, n));
  std::vector<double> closest(static_cast<size_t>(n), kInf), d2;
  points.squared_distances(centres, d2);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < centres.k; ++c) closest[i] = std::min(closest[i], d2[i * centres.k + c]);

  std::vector<double> cumulative(static_cast<size_t>(n));
  while (centres.k < k) {
    std::partial_sum(closest.begin(), closest.end(), cumulative.begin());
    const double potential = cumulative.back();
    Centres candidates{0, dim, {}};
    std::vector<int64_t> candidate_ids;
    for (int64_t t = 0; t < trials; ++t) {
      const double target = rng.uniform_double() * potential;
      const int64_t id = std::min<int64_t>(
          n - 1, std::lower_bound(cumulative.begin(), cumulative.end(), target) - cumulative.begin());
      candidate_ids.push_back(id);
      const float* x = points.row(id);
      candidates.values.insert(candidates.values.end(), x, x + dim);
      ++candidates.k;
    }
    std::vector<double> to_candidates;
    points.squared_distances(candidates, to_candidates);
    int64_t best = 0;
    double best_potential = kInf;
    for (int64_t t = 0; t < trials; ++t) {
      double pot = 0.0;
      for (int64_t i = 0; i < n; ++i) pot += std::min(closest[i], to_candidates[i * trials + t]);
      if (pot < best_potential) {
        best_potential = pot;
        best = t;
      }
    }
    for (int64_t i = 0; i < n; ++i) closest[i] = std::min(closest[i], to_candidates[i * trials + best]);
    append_point(candidate_ids[best]);
  }
  return centres;
}

// Means of the points of each cluster; a cluster left empty takes over a far point (see the
// header). `movable[i]` says whether point i may be moved; `distance` is each point's squared
// distance to its centre in `previous`. Points are summed per cluster in index order. A cluster
// that no point can join keeps its previous centre.
// Split, each rank sums its share of the dimensions (over every point, in index order).
Centres update_centres(const Points& points, std::vector<int64_t>& labels, const std::vector<double>& distance,
                       const std::vector<char>& movable, const Centres& previous, const Split& split) {
  const int64_t k = previous.k;
  const int64_t n = points.size(), dim = points.dim();
  std::vector<int64_t> count(static_cast<size_t>(k), 0);
  for (int64_t c : labels) ++count[c];
  std::vector<int64_t> empty;
  for (int64_t c = 0; c < k; ++c)
    if (count[c] == 0) empty.push_back(c);
  if (!empty.empty()) {
    std::vector<int64_t> order;
    for (int64_t i = 0; i < n; ++i)
      if (movable[i]) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return distance[a] > distance[b]; });
    size_t next = 0;
    for (int64_t c : empty) {
      while (next < order.size() && count[labels[order[next]]] < 2) ++next;
      if (next == order.size()) break;  // no point can move: the cluster keeps no members
      const int64_t i = order[next++];
      --count[labels[i]];
      labels[i] = c;
      count[c] = 1;
    }
  }
  // Each cluster's members in index order (a counting sort of the labels), summed in that order
  // on the points' device, so every sum has the same bits for any thread count or device.
  // This rank's dimensions [own_first, own_last) of every centre: [k, own_last − own_first].
  std::vector<int64_t> offsets(static_cast<size_t>(k + 1), 0), members(static_cast<size_t>(n));
  for (int64_t c = 0; c < k; ++c) offsets[c + 1] = offsets[c] + count[c];
  std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
  for (int64_t i = 0; i < n; ++i) members[next[labels[i]]++] = i;
  const std::vector<std::pair<int64_t, int64_t>> dims = split.shares(dim);
  const auto [own_first, own_last] = split.own(dims);
  const int64_t width = own_last - own_first;
  std::vector<double> own = points.cluster_sums(members, offsets, own_first, own_last);
  for (int64_t c = 0; c < k; ++c) {
    double* centre = own.data() + c * width;
    if (count[c] == 0)
      std::copy(previous.row(c) + own_first, previous.row(c) + own_last, centre);
    else
      for (int64_t d = 0; d < width; ++d) centre[d] /= static_cast<double>(count[c]);
  }
  // Every rank's dimensions, put back in rows.
  const std::vector<double> all = split.gathered(own, share_sizes(dims, k));
  Centres centres{k, dim, std::vector<double>(static_cast<size_t>(k * dim))};
  const double* from = all.data();
  for (const auto& [first, last] : dims)
    for (int64_t c = 0; c < k; ++c, from += last - first)
      std::copy(from, from + (last - first), centres.row(c) + first);
  return centres;
}

double total_shift_squared(const Centres& a, const Centres& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.values.size(); ++i) s += (a.values[i] - b.values[i]) * (a.values[i] - b.values[i]);
  return s;
}

double total_shift(const Centres& a, const Centres& b) {
  double s = 0.0;
  for (int64_t c = 0; c < a.k; ++c) {
    double d2 = 0.0;
    for (int64_t d = 0; d < a.dim; ++d) d2 += (a.row(c)[d] - b.row(c)[d]) * (a.row(c)[d] - b.row(c)[d]);
    s += std::sqrt(d2);
  }
  return s;
}

// sklearn's _tolerance: tol · the mean over features of their variance (rows summed in order).
double sklearn_tolerance(const Points& points, double tol) {
  const int64_t n = points.size(), dim = points.dim();
  std::vector<double> mean(static_cast<size_t>(dim), 0.0), variance(static_cast<size_t>(dim), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) mean[d] += points.row(i)[d];
  for (double& m : mean) m /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) variance[d] += (points.row(i)[d] - mean[d]) * (points.row(i)[d] - mean[d]);
  double total = 0.0;
  for (double v : variance) total += v / static_cast<double>(n);
  return tol * total / static_cast<double>(dim);
}

struct Run {
  std::vector<int64_t> labels;
  Centres centres;
  double inertia = kInf;
  int64_t iterations = 0;
};

// sklearn's _kmeans_single_lloyd.
Run lloyd(const Points& points, Centres centres, int64_t max_iters, double tolerance, const Split& split) {
  const std::vector<char> movable(static_cast<size_t>(points.size()), 1);
  std::vector<int64_t> labels, previous_labels;
  bool strict_convergence = false;
  int64_t iteration = 0;
  while (iteration < max_iters) {
    ++iteration;
    labels = points.nearest(centres, split);
    const std::vector<double> distance = assigned_distances(points, labels, centres, split);
    Centres updated = update_centres(points, labels, distance, movable, centres, split);
    const double shift = total_shift_squared(updated, centres);
    centres = std::move(updated);
    if (labels == previous_labels) {
      strict_convergence = true;
      break;
    }
    if (shift <= tolerance) break;
    previous_labels = labels;
  }
  // A last assignment so that the labels match the final centres.
  if (!strict_convergence) labels = points.nearest(centres, split);
  const double inertia = ordered_sum(assigned_distances(points, labels, centres, split));
  return {std::move(labels), std::move(centres), inertia, iteration};
}

void check_options(const char* op, const KMeansOptions& options) {
  check(options.k >= 1, op, ": k = ", options.k, " must be at least 1");
  check(options.restarts >= 1, op, ": restarts = ", options.restarts, " must be at least 1");
  check(options.max_iters >= 1, op, ": max_iters = ", options.max_iters, " must be at least 1");
  check(options.tol >= 0.0, op, ": tol = ", options.tol, " must be non-negative");
}

void check_features(const char* op, const Tensor& features) {
  check(features.defined(), op, ": features are undefined");
  check(features.dim() == 2, op, ": features must be [N, D], got ", features.str());
  check(features.dtype() == DType::f32 || features.dtype() == DType::f64, op, ": features must be f32 or f64, got ",
        features.str());
}

void check_initial_centres(const char* op, const Tensor& c, const KMeansOptions& options, int64_t dim) {
  check(c.dim() == 2 && c.size(0) == options.k && c.size(1) == dim, op, ": initial centres ", c.str(), " must be [k = ",
        options.k, ", D = ", dim, "]");
  check(c.dtype() == DType::f32 || c.dtype() == DType::f64, op, ": initial centres must be f32 or f64, got ", c.str());
  check(options.restarts == 1, op, ": a warm start makes no random draw, so restarts must be 1, got ",
        options.restarts);
}

// The labelled class means as centres 0..C−1, then rows C..k−1 of `initial` [k, D].
Centres warm_start(const Centres& class_means, const Tensor& initial) {
  const int64_t k = initial.size(0), dim = initial.size(1);
  const std::vector<double> values = initial.to(Device::cpu()).to(DType::f64).to_vector<double>();
  Centres centres{k, dim, values};
  std::copy(class_means.values.begin(), class_means.values.end(), centres.values.begin());
  return centres;
}

// The restarts this process runs: [first, restarts) in steps of `step`.
struct RestartShare {
  int64_t first = 0, step = 1;
};
// Restarts fewer than the ranks (a warm start's one) are each split over the ranks; more are
// shared out whole.
bool splits_restarts(const KMeansOptions& options) {
  return options.world && options.world->size() > 1 && options.restarts < options.world->size();
}
RestartShare restart_share(const KMeansOptions& options) {
  if (!options.world || options.world->size() == 1 || splits_restarts(options)) return {};
  return {options.world->rank(), options.world->size()};
}

// Every rank's kept run (`local`, from restart `restart`; −1: none kept) → the one run one process
// keeps: the lowest inertia, the first restart on a tie, none where no inertia is finite. The
// rank that ran it sends its labels (`points` of them) and centres (k × dim).
Run agree_on_best(const KMeansOptions& options, Run local, int64_t restart, int64_t points, int64_t dim) {
  Collective& world = *options.world;
  const int n = world.size();
  struct Kept {
    double inertia;
    int64_t restart;
  };
  const Kept mine{local.inertia, restart};
  std::vector<Kept> all(static_cast<size_t>(n));
  world.all_gather(&mine, sizeof mine, all.data(), std::vector<size_t>(static_cast<size_t>(n), sizeof mine));
  int winner = -1;
  for (int q = 0; q < n; ++q) {
    const Kept& k = all[static_cast<size_t>(q)];
    if (!(k.inertia < kInf)) continue;  // kept nothing (or only NaN), as one process would not
    const Kept* best = winner < 0 ? nullptr : &all[static_cast<size_t>(winner)];
    if (!best || k.inertia < best->inertia || (k.inertia == best->inertia && k.restart < best->restart)) winner = q;
  }
  if (winner < 0) return Run{};
  Run run = world.rank() == winner ? std::move(local) : Run{};
  run.inertia = all[static_cast<size_t>(winner)].inertia;
  run.labels.resize(static_cast<size_t>(points));
  run.centres.k = options.k;
  run.centres.dim = dim;
  run.centres.values.resize(static_cast<size_t>(options.k * dim));
  world.broadcast(run.labels.data(), run.labels.size() * sizeof(int64_t), winner);
  world.broadcast(run.centres.values.data(), run.centres.values.size() * sizeof(double), winner);
  world.broadcast(&run.iterations, sizeof run.iterations, winner);
  return run;
}

KMeansResult to_result(Run run, Device device) {
  std::vector<float> values(run.centres.values.begin(), run.centres.values.end());
  return {std::move(run.labels), from_vector(values, {run.centres.k, run.centres.dim}, device), run.inertia,
          run.iterations};
}

}  // namespace

KMeansResult kmeans(const Tensor& features, const KMeansOptions& options) {
  check_features("kmeans", features);
  check_options("kmeans", options);
  check(features.size(0) >= options.k, "kmeans: ", features.str(), " has fewer points than k = ", options.k);
  const Points points(features, options.rows_per_product);
  const double tolerance = sklearn_tolerance(points, options.tol);
  const int64_t trials = 2 + static_cast<int64_t>(std::log(static_cast<double>(options.k)));
  Run best;
  int64_t best_restart = -1;
  const RestartShare share = restart_share(options);
  const Split split(splits_restarts(options) ? options.world : nullptr);
  for (int64_t r = share.first; r < options.restarts; r += share.step) {
    RandomStream rng(options.seed, stream_id("kmeans", {r}));
    Centres start = kmeans_plus_plus(points, Centres{0, points.dim(), {}}, options.k, trials, rng);
    Run run = lloyd(points, std::move(start), options.max_iters, tolerance, split);
    if (run.inertia < best.inertia) {
      best = std::move(run);
      best_restart = r;
    }
  }
  if (share.step > 1) best = agree_on_best(options, std::move(best), best_restart, features.size(0), points.dim());
  return to_result(std::move(best), points.device());
}

KMeansResult semi_supervised_kmeans(const Tensor& features, const std::vector<int64_t>& labelled_indices,
                                    const std::vector<int64_t>& labelled_classes, const KMeansOptions& options,
                                    const Tensor& initial_centres) {
  const char* op = "semi_supervised_kmeans";
  check_features(op, features);
  check_options(op, options);
  check(labelled_indices.size() == labelled_classes.size(), op, ": ", labelled_indices.size(),
        " labelled indices but ", labelled_classes.size(), " classes");
  const int64_t n = features.size(0);
  std::vector<int64_t> fixed_cluster(static_cast<size_t>(n), -1);
  std::vector<int64_t> classes(labelled_classes);
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  const int64_t num_classes = static_cast<int64_t>(classes.size());
  check(num_classes <= options.k, op, ": ", num_classes, " labelled classes do not fit in k = ", options.k);
  for (size_t i = 0; i < labelled_indices.size(); ++i) {
    const int64_t index = labelled_indices[i];
    check(index >= 0 && index < n, op, ": labelled index ", index, " is outside ", features.str());
    check(fixed_cluster[index] == -1, op, ": row ", index, " is labelled twice");
    fixed_cluster[index] = std::lower_bound(classes.begin(), classes.end(), labelled_classes[i]) - classes.begin();
  }
  std::vector<int64_t> unlabelled_rows;
  for (int64_t i = 0; i < n; ++i)
    if (fixed_cluster[i] < 0) unlabelled_rows.push_back(i);
  const int64_t num_unlabelled = static_cast<int64_t>(unlabelled_rows.size());
  check(num_unlabelled > 0 || num_classes == options.k, op, ": k = ", options.k, " exceeds the ", num_classes,
        " labelled classes but no row is unlabelled");

  const Points all(features, options.rows_per_product);
  const int64_t dim = all.dim();
  // The unlabelled rows on their own (GCD's u_feats): k-means++ and the nearest-centre search run on them.
  const Tensor unlabelled_features =
      num_unlabelled == 0 ? Tensor()
                          : index_select(features, from_vector(unlabelled_rows, {num_unlabelled}, features.device()));
  const std::unique_ptr<Points> unlabelled =
      num_unlabelled == 0 ? nullptr : std::make_unique<Points>(unlabelled_features, options.rows_per_product);

  // Labelled class means: centres 0..C−1.
  Centres class_means{num_classes, dim, std::vector<double>(static_cast<size_t>(num_classes * dim), 0.0)};
  std::vector<int64_t> class_count(static_cast<size_t>(num_classes), 0);
  for (int64_t i = 0; i < n; ++i)
    if (fixed_cluster[i] >= 0) {
      ++class_count[fixed_cluster[i]];
      for (int64_t d = 0; d < dim; ++d) class_means.row(fixed_cluster[i])[d] += all.row(i)[d];
    }
  for (int64_t c = 0; c < num_classes; ++c)
    for (int64_t d = 0; d < dim; ++d) class_means.row(c)[d] /= static_cast<double>(class_count[c]);

  std::vector<char> movable(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) movable[i] = fixed_cluster[i] < 0;
  const bool warm = initial_centres.defined();
  if (warm) check_initial_centres(op, initial_centres, options, dim);
  Run best;
  int64_t best_restart = -1;
  const RestartShare share = restart_share(options);
  const Split split(splits_restarts(options) ? options.world : nullptr);
  for (int64_t r = share.first; r < options.restarts; r += share.step) {
    RandomStream rng(options.seed, stream_id("semi_supervised_kmeans", {r}));
    Centres centres = warm                          ? warm_start(class_means, initial_centres)
                      : num_classes == options.k ? class_means
                                                 : kmeans_plus_plus(*unlabelled, class_means, options.k, 1, rng);
    Run run;
    std::vector<int64_t> labels = fixed_cluster;
    for (int64_t iteration = 1; iteration <= options.max_iters; ++iteration) {
      run.iterations = iteration;
      if (unlabelled) {
        const std::vector<int64_t> nearest = unlabelled->nearest(centres, split);
        for (int64_t u = 0; u < num_unlabelled; ++u) labels[unlabelled_rows[u]] = nearest[u];
      }
      const std::vector<double> distance = assigned_distances(all, labels, centres, split);
      const double inertia = ordered_sum(distance);
      const bool improved = inertia < run.inertia;
      if (improved) {
        run.inertia = inertia;
        run.labels = labels;
      }
      Centres updated = update_centres(all, labels, distance, movable, centres, split);
      const double shift = total_shift(updated, centres);
      centres = std::move(updated);
      if (improved) run.centres = centres;
      if (shift * shift < options.tol) break;
    }
    if (run.inertia < best.inertia) {
      best = std::move(run);
      best_restart = r;
    }
  }
  if (share.step > 1) best = agree_on_best(options, std::move(best), best_restart, n, dim);
  return to_result(std::move(best), all.device());
}

std::vector<int64_t> nearest_centres(const Tensor& features, const Tensor& centres) {
  check(features.defined() && centres.defined() && features.dim() == 2 && centres.dim() == 2 &&
            features.size(1) == centres.size(1) && centres.size(0) >= 1,
        "nearest_centres: expected features [N, D] and centres [k, D] with k >= 1, got ", features, " and ", centres);
  const Tensor host = centres.to(Device::cpu()).to(DType::f32);
  Centres c{host.size(0), host.size(1), {}};
  c.values.assign(host.data<float>(), host.data<float>() + c.k * c.dim);
  return Points(features).nearest(c);
}

}  // namespace mcdl
