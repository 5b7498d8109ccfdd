// t-SNE (van der Maaten & Hinton, 2008) for the pictures of a run: the exact O(N²) method, as
// scikit-learn's TSNE(method="exact") runs it: Gaussian affinities with each point's bandwidth
// found by binary search for the perplexity, symmetrised; Student-t similarities in 2-D; gradient
// descent with early exaggeration (12 for the first 250 iterations), momentum 0.5 then 0.8 and
// per-coordinate gains; learning rate max(N / 12 / 4, 50). For up to a few thousand points.
#pragma once
#include <cstdint>
#include <vector>

namespace mcdl {

struct TsneOptions {
  double perplexity = 30.0;
  int64_t iterations = 1000;
  uint64_t seed = 0;  // the initial layout, N(0, 1e-4²) per coordinate
};

// x: n rows of d values (row-major). Returns n rows of 2 values.
std::vector<double> tsne_2d(const std::vector<double>& x, int64_t n, int64_t d, const TsneOptions& options);

// scikit-learn's trustworthiness of an embedding y (n rows of dy) of x (n rows of dx) with k
// neighbours: 1 − 2/(n·k·(2n − 3k − 1))·Σ_i Σ_{j among i's k nearest in y} max(0, rank of j among
// i's neighbours in x − k). 1 when every embedded neighbourhood is a true one.
double trustworthiness(const std::vector<double>& x, int64_t dx, const std::vector<double>& y, int64_t dy,
                       int64_t n, int64_t k);

}  // namespace mcdl
