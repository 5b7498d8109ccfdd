// The number of classes when it is unknown, as GCD estimates it (docs/reference-facts.md §3.4,
// estimate_k.py): k-means with K clusters over every training image's feature, scored by the
// clustering accuracy on the labelled images alone (their classes are known), and K searched by
// Brent's bounded method (scipy's minimize_scalar(method='bounded')) over [k_min, k_max].
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "engine/tensor.h"
#include "mcdl/evaluation/kmeans.h"
#include "mcdl/run/train_config.h"
#include "mcdl/run/training_data.h"

namespace mcdl {

// Brent's bounded minimisation (golden section with parabolic steps, as scipy's
// _minimize_scalar_bounded) of f over the integers of [low, high]: each candidate x is rounded
// to the nearest integer, f is called once per integer (answers kept), and the search stops when
// the bracket is within one. Returns the integer with the smallest f seen, the largest on a tie
// (scipy returns whichever tied point it met last; for K, a plateau of equal accuracy on the
// labelled images ends where K starts to split their classes: the largest K they allow).
int64_t minimize_over_integers(const std::function<double(int64_t)>& f, int64_t low, int64_t high,
                               int64_t max_evaluations = 60);

struct KEstimate {
  int64_t k = 0;
  std::map<int64_t, double> labelled_accuracy;  // every K tried → the objective there
};

// features [N, D] (all training images, L2-normalised as GCD's), labelled_rows[i] of class
// labelled_classes[i]. `kmeans_options.k` is ignored; `on_candidate(k, accuracy)` is called as
// each K is scored. k_min is at least the number of labelled classes (GCD's lower bound).
KEstimate estimate_num_classes(const Tensor& features, const std::vector<int64_t>& labelled_rows,
                               const std::vector<int64_t>& labelled_classes, int64_t k_min, int64_t k_max,
                               const KMeansOptions& kmeans_options,
                               const std::function<void(int64_t, double)>& on_candidate = {});

// The estimate for a run's data (config: the backbone from --weights or --model, its seed, the
// loader settings): the frozen backbone's L2-normalised CLS features of every training image
// (test transform) on `device`, k-means with `restarts`, the labelled images' classes as the
// objective. Prints each K and its accuracy on stderr.
KEstimate estimate_num_classes_for(const TrainConfig& config, const TrainingData& data, Device device, int64_t k_min,
                                   int64_t k_max, int64_t restarts);

// The model's number of clusters for a run (--clusters): the dataset's K, the number given, or
// with auto the estimate, which is written back into config.clusters (config.json records it).
// At least the number of labelled classes.
int64_t resolve_clusters(TrainConfig& config, const TrainingData& data, Device device);

}  // namespace mcdl
