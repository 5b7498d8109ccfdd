#include "mcdl/run/estimate_k.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/device.h"
#include "engine/error.h"
#include "mcdl/evaluation/cluster_accuracy.h"
#include "mcdl/evaluation/evaluation_set.h"
#include "mcdl/run/run_start.h"

namespace mcdl {

int64_t minimize_over_integers(const std::function<double(int64_t)>& f, int64_t low, int64_t high,
                               int64_t max_evaluations) {
  check(low <= high, "minimize_over_integers: empty range [", low, ", ", high, "]");
  std::map<int64_t, double> seen;
  auto value = [&](double x) {
    const int64_t k = std::clamp<int64_t>(std::llround(x), low, high);
    auto it = seen.find(k);
    if (it == seen.end()) it = seen.emplace(k, f(k)).first;
    return it->second;
  };
  // scipy's _minimize_scalar_bounded with xatol = 1 (the objective lives on integers).
  const double golden = 0.5 * (3.0 - std::sqrt(5.0)), sqrt_eps = std::sqrt(2.2e-16), xatol = 1.0;
  double a = static_cast<double>(low), b = static_cast<double>(high);
  double v = a + golden * (b - a), w = v, x = v;  // the best point, the second best, the previous w
  double fx = value(x), fv = fx, fw = fx, rat = 0.0, e = 0.0;
  double xm = 0.5 * (a + b), tol1 = sqrt_eps * std::abs(x) + xatol / 3.0, tol2 = 2.0 * tol1;
  for (int64_t calls = 1; std::abs(x - xm) > tol2 - 0.5 * (b - a) && calls < max_evaluations; ++calls) {
    bool golden_step = true;
    if (std::abs(e) > tol1) {  // try a parabola through x, w and v
      golden_step = false;
      double r = (x - w) * (fx - fv), q = (x - v) * (fx - fw), p = (x - v) * q - (x - w) * r;
      q = 2.0 * (q - r);
      if (q > 0.0) p = -p;
      q = std::abs(q);
      r = e;
      e = rat;
      if (std::abs(p) < std::abs(0.5 * q * r) && p > q * (a - x) && p < q * (b - x)) {
        rat = p / q;
        const double u = x + rat;
        if (u - a < tol2 || b - u < tol2) rat = tol1 * (xm - x >= 0.0 ? 1.0 : -1.0);
      } else {
        golden_step = true;
      }
    }
    if (golden_step) {
      e = x >= xm ? a - x : b - x;
      rat = golden * e;
    }
    const double u = x + (rat >= 0.0 ? 1.0 : -1.0) * std::max(std::abs(rat), tol1);
    const double fu = value(u);
    if (fu <= fx) {
      (u >= x ? a : b) = x;
      v = w, fv = fw;
      w = x, fw = fx;
      x = u, fx = fu;
    } else {
      (u < x ? a : b) = u;
      if (fu <= fw || w == x) {
        v = w, fv = fw;
        w = u, fw = fu;
      } else if (fu <= fv || v == x || v == w) {
        v = u, fv = fu;
      }
    }
    xm = 0.5 * (a + b);
    tol1 = sqrt_eps * std::abs(x) + xatol / 3.0;
    tol2 = 2.0 * tol1;
  }
  int64_t best = low;
  double best_value = std::numeric_limits<double>::infinity();
  for (const auto& [k, fk] : seen)
    if (fk <= best_value) best = k, best_value = fk;
  return best;
}

KEstimate estimate_num_classes(const Tensor& features, const std::vector<int64_t>& labelled_rows,
                               const std::vector<int64_t>& labelled_classes, int64_t k_min, int64_t k_max,
                               const KMeansOptions& kmeans_options,
                               const std::function<void(int64_t, double)>& on_candidate) {
  check(labelled_rows.size() == labelled_classes.size() && !labelled_rows.empty(),
        "estimate_num_classes: expected labelled rows with one class each");
  std::vector<int64_t> classes = labelled_classes;
  std::sort(classes.begin(), classes.end());
  const int64_t known = std::unique(classes.begin(), classes.end()) - classes.begin();
  k_min = std::max(k_min, known);
  k_max = std::min(k_max, features.size(0));
  check(k_min <= k_max, "estimate_num_classes: no K to try between ", k_min, " (the labelled classes) and ", k_max,
        " (the images, or --k-max)");
  KEstimate estimate;
  auto negative_accuracy = [&](int64_t k) {
    KMeansOptions options = kmeans_options;
    options.k = k;
    const KMeansResult result = kmeans(features, options);
    std::vector<int64_t> predicted;
    for (int64_t row : labelled_rows) predicted.push_back(result.assignment[static_cast<size_t>(row)]);
    const std::vector<bool> all_old(labelled_classes.size(), true);
    const double accuracy = split_cluster_acc_v2(labelled_classes, predicted, all_old).all;
    estimate.labelled_accuracy[k] = accuracy;
    if (on_candidate) on_candidate(k, accuracy);
    return -accuracy;
  };
  estimate.k = minimize_over_integers(negative_accuracy, k_min, k_max);
  return estimate;
}

KEstimate estimate_num_classes_for(const TrainConfig& config, const TrainingData& data, Device device, int64_t k_min,
                                   int64_t k_max, int64_t restarts) {
  const BackboneSource source = backbone_source(config);
  VisionTransformer backbone(source.config);
  backbone.initialize(config.seed);
  if (!source.tensors.empty()) backbone.load_parameters(source.tensors);
  backbone.set_requires_grad(false);
  backbone.to(device);

  // Every training image: the labelled ones first, then the unlabelled pool.
  std::vector<int64_t> images = data.labelled, labelled_rows, labelled_classes;
  images.insert(images.end(), data.unlabelled.begin(), data.unlabelled.end());
  for (size_t i = 0; i < data.labelled.size(); ++i) {
    labelled_rows.push_back(static_cast<int64_t>(i));
    labelled_classes.push_back(data.label(data.labelled[i]));
  }
  EvaluationSet all(*data.cache, images, evaluation_options(config, data, device));
  const Tensor features = all.features(backbone, true);
  std::fprintf(stderr, "features of %lld images; k-means (%lld restarts) for K in [%lld, %lld]\n",
               static_cast<long long>(features.size(0)), static_cast<long long>(restarts),
               static_cast<long long>(k_min), static_cast<long long>(k_max));
  KMeansOptions kmeans_options;
  kmeans_options.restarts = restarts;
  kmeans_options.seed = config.seed;
  return estimate_num_classes(features, labelled_rows, labelled_classes, k_min, k_max, kmeans_options,
                              [](int64_t k, double accuracy) {
                                std::fprintf(stderr, "  K %lld  labelled accuracy %.4f\n",
                                             static_cast<long long>(k), accuracy);
                              });
}

int64_t resolve_clusters(TrainConfig& config, const TrainingData& data, Device device) {
  if (config.estimate_clusters) {
    config.clusters = estimate_num_classes_for(config, data, device, data.num_old_classes(), config.k_max,
                                               resolve_defaults(config).kmeans_restarts.value())
                          .k;
    std::fprintf(stderr, "--clusters auto: %lld clusters\n", static_cast<long long>(*config.clusters));
    config.estimate_clusters = false;
  }
  const int64_t clusters = config.clusters.value_or(data.num_classes());
  config.clusters = clusters;  // config.json records the number
  check(clusters >= data.num_old_classes(), "--clusters ", clusters, " is fewer than the ", data.num_old_classes(),
        " labelled classes (each needs its own cluster)");
  return clusters;
}

}  // namespace mcdl
