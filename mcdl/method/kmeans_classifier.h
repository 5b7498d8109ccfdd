// GCD + MCDL's classifier (docs/method.md §9). GCD trains no classifier, while MCDL's memory
// banks, buckets and losses all read per-sample class predictions; the paper plugs MCDL into GCD
// without saying where they come from. Here they come from GCD's own clustering: semi-supervised
// k-means (the labelled images fixed to their classes, K clusters) over the L2-normalised
// backbone features of every training image, refitted before the first epoch and after each
// one. Each refit is warm-started from the previous centres, so a cluster keeps its identity
// from epoch to epoch, as the memory banks' consistency needs; only the first fit draws
// k-means++ starts (with the configured restarts).
//
// The centres C [K, D], L2-normalised and without gradient, are a cosine classifier like
// SimGCD's: logits = normalize(feature) · normalize(C)ᵀ, which McdlStep divides by the student
// temperature (0.1), with the gradient flowing into the backbone.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "mcdl/evaluation/kmeans.h"

namespace mcdl {

class KMeansClassifier {
 public:
  // labelled_rows: the rows of every later fit's feature matrix that are labelled, with their
  // classes; first_fit: K, the restarts and iterations of the first fit (later fits run one
  // warm-started restart with the same iterations), and the seed. Logits live on `device`.
  KMeansClassifier(std::vector<int64_t> labelled_rows, std::vector<int64_t> labelled_classes, KMeansOptions first_fit,
                   Device device);

  bool fitted() const { return centres_.defined(); }
  // Refits on features [N, D] (the same N rows every time; L2-normalised by the caller) and
  // returns each row's cluster.
  std::vector<int64_t> fit(const Tensor& features);
  // Cosine logits [n, K] of backbone features [n, D] (any floating dtype; the centres follow
  // it). Requires a fit (or load_state) first.
  Tensor logits(const Tensor& features) const;

  // For a checkpoint: "centres" f32 [K, D], the last fit's un-normalised centres (the next
  // warm start). load_state checks the shape and restores exactly those values.
  std::map<std::string, Tensor> state() const;
  void load_state(const std::map<std::string, Tensor>& state);

 private:
  void set_centres(const Tensor& centres);

  std::vector<int64_t> labelled_rows_, labelled_classes_;
  KMeansOptions first_fit_;
  Device device_;
  int64_t dim_ = -1;        // D, known from the first fit or load
  Tensor centres_;          // f32 [K, D] on the CPU, as k-means left them
  Tensor unit_centres_;     // normalize(centres_) on device_
};

}  // namespace mcdl
