// k-means for feature matrices: plain k-means (sklearn's KMeans, algorithm="lloyd") and the
// semi-supervised k-means of GCD (docs/reference-facts.md §3.3, faster_mix_k_means_pytorch.py).
//
// Both draw from named random streams, restart r using stream_id("kmeans", {r}) or
// stream_id("semi_supervised_kmeans", {r}) under options.seed, so a result depends only on
// the inputs and the seed (not on thread count). Nearest centres come from GEMM distances
// ‖x‖² − 2·x·c + ‖c‖², the product x·cᵀ through the engine's matmul on the features' device
// (CUDA features use the GPU for it); means, inertia and the rest run on the host in double.
// Inertia is recomputed exactly as Σ‖x − c‖² in double, not from the GEMM values.
//
// Empty clusters (k-means on data with fewer distinct points than k, or a bad start): as
// sklearn's _relocate_empty_clusters_dense, each empty cluster takes the point farthest from
// its current centre, in decreasing order of that distance, and that point leaves its old
// cluster (only points of clusters with ≥ 2 members, and only unlabelled points in the
// semi-supervised case, are moved). GCD's code would produce a NaN centre instead.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/collective.h"
#include "engine/tensor.h"

namespace mcdl {

struct KMeansOptions {
  int64_t k = 0;
  int64_t restarts = 10;    // sklearn's n_init=10; GCD's k_means.py script runs 100
  int64_t max_iters = 300;  // sklearn's max_iter; GCD's script runs 200
  // kmeans: sklearn's tolerance, Σ_k ‖Δc_k‖² ≤ tol·mean_d Var(x_d) (plus strict convergence
  // when no label changes). semi_supervised_kmeans: GCD's rule, (Σ_k ‖Δc_k‖)² < tol.
  double tol = 1e-4;
  uint64_t seed = 0;
  // The processes that share the work (null, or one: this process does it all); every rank must
  // make the same call, and every rank gets the result one process computes, bit for bit.
  // - At least as many restarts as ranks: rank q runs restarts q, q + N, ...; the kept restart is
  //   then agreed on (the lowest inertia, the first restart on a tie) and sent by the rank that
  //   ran it.
  // - Fewer (a warm start's one): each restart is split. A rank computes the nearest centres of
  //   its share of the distance products, the distances of its share of the points and the
  //   centres' sums over its share of the dimensions (each sum over all points, in index order),
  //   and the ranks exchange them after each step.
  Collective* world = nullptr;
  // The rows of each distance product x·cᵀ (0: enough for about 4 M products per call). Results
  // with other values may differ in the last bits; with the same value they do not depend on
  // `world`.
  int64_t rows_per_product = 0;
};

struct KMeansResult {
  std::vector<int64_t> assignment;  // [N] cluster of each row of the features
  Tensor centres;                   // f32 [k, D] on the features' device
  double inertia = 0.0;             // Σ ‖x − centre‖² over all N points
  int64_t iterations = 0;           // Lloyd iterations of the kept restart
};

// sklearn's KMeans(n_clusters=k, n_init=restarts, max_iter, tol): per restart greedy
// k-means++ (first centre uniform, then 2 + ⌊ln k⌋ candidates drawn ∝ D², keeping the one
// that lowers the potential most), Lloyd iterations until converged, a final assignment to
// the last centres; the restart with the lowest inertia is kept (the first on a tie).
// features: [N, D] f32 (f64 is converted), on the CPU or a CUDA device, with N ≥ k ≥ 1.
KMeansResult kmeans(const Tensor& features, const KMeansOptions& options);

// GCD's K_Means.fit_mix over all N rows of `features`, of which rows labelled_indices[i] carry
// class labelled_classes[i] and the rest are unlabelled. Distinct labelled classes in
// ascending order become clusters 0..C−1 (class c → cluster c when the classes are 0..C−1)
// and their points never move. Per restart: centres 0..C−1 are the labelled class means, the
// other k − C come from k-means++ over the unlabelled points (one D²-weighted draw per centre,
// as GCD's kpp); each iteration assigns the unlabelled points to their nearest centre,
// measures the inertia (labelled + unlabelled) against the centres they were assigned to,
// then moves every centre to the mean of its points. An iteration whose inertia is lower than
// all before keeps its assignment, that inertia and the updated centres; the run stops when
// (Σ‖Δc‖)² < tol. The restart with the lowest inertia wins. C ≤ k is required.
//
// A warm start: `initial_centres`, f32 or f64 [k, D] (e.g. a previous result's centres), when
// defined. Centres C..k−1 then start from its rows C..k−1 instead of k-means++ (0..C−1 are the
// labelled class means as always), so the clusters keep their identities from one call to the
// next; no random draw is made, and options.restarts must be 1.
KMeansResult semi_supervised_kmeans(const Tensor& features, const std::vector<int64_t>& labelled_indices,
                                    const std::vector<int64_t>& labelled_classes, const KMeansOptions& options,
                                    const Tensor& initial_centres = Tensor());

// The nearest of `centres` [k, D] to each row of `features` [N, D] (squared Euclidean distance,
// the lowest index on a tie): how a clustering found on some images labels new ones.
std::vector<int64_t> nearest_centres(const Tensor& features, const Tensor& centres);

}  // namespace mcdl
