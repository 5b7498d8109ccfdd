// What k-means (kmeans.cpp) computes its steps on: the points on their own device with the
// distance products, nearest centres, exact distances and per-cluster sums, and how one
// restart's work is split over the ranks of a world. Private to mcdl/evaluation.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/all_gather.h"
#include "engine/collective.h"
#include "engine/tensor.h"

namespace mcdl::kmeans_detail {

// How one restart's work is split over the ranks of a world: each rank computes its share of
// the points or dimensions, and the shares are exchanged so that every rank holds the whole.
// Without a world (or with one rank) this process does it all.
class Split {
 public:
  explicit Split(Collective* world = nullptr) : world_(world && world->size() > 1 ? world : nullptr) {}
  bool split() const { return world_ != nullptr; }
  // Each rank's contiguous share of `count` items, and this rank's of those.
  std::vector<std::pair<int64_t, int64_t>> shares(int64_t count) const;
  std::pair<int64_t, int64_t> own(const std::vector<std::pair<int64_t, int64_t>>& shares) const {
    return shares[split() ? static_cast<size_t>(world_->rank()) : 0];
  }
  // Every rank's `own` values (count[r] from rank r) in rank order.
  template <class T>
  std::vector<T> gathered(const std::vector<T>& own, const std::vector<int64_t>& count) const {
    return split() ? all_gather_values(*world_, own, count) : own;
  }

 private:
  Collective* world_;
};

// The values per rank of contiguous shares.
std::vector<int64_t> share_sizes(const std::vector<std::pair<int64_t, int64_t>>& shares, int64_t per_item = 1);

// Centres on the host: k rows of D doubles.
struct Centres {
  int64_t k = 0, dim = 0;
  std::vector<double> values;
  const double* row(int64_t c) const { return values.data() + c * dim; }
  double* row(int64_t c) { return values.data() + c * dim; }
};

// The points being clustered: on their own device for the GEMM, and on the host.
class Points {
 public:
  // rows_per_product: the rows of each distance product (0: block_rows' rule).
  explicit Points(const Tensor& features, int64_t rows_per_product = 0);

  int64_t size() const { return n_; }
  int64_t dim() const { return dim_; }
  Device device() const { return device_; }
  const float* row(int64_t i) const { return host_data_ + i * dim_; }

  // The rows of one distance product for m centres: by default enough to keep the [rows, m]
  // product near 4 M values whatever N is. The products' rows are cut the same way however the
  // work is split, so every row's distances have the same bits.
  int64_t block_rows(int64_t m) const;

  // For every point, the squared distances to the m rows of `centres` (row-major [n, m]),
  // by ‖x‖² − 2·x·c + ‖c‖² with x·cᵀ from matmul on the points' device, clamped at 0.
  void squared_distances(const Centres& centres, std::vector<double>& out) const;

  // The nearest centre of each point (the lowest index on a tie): the distances of
  // squared_distances, compared where the products are (nearest_from_products), so only the
  // indices leave a GPU. Split, each rank computes those of its share of the products' blocks.
  std::vector<int64_t> nearest(const Centres& centres, const Split& split = Split()) const;

  // Exact ‖x_i − c_{labels[i]}‖² in double for the points [first, last), each sum in element order
  // (assigned_squared_distances, on the points' device).
  std::vector<double> assigned_distances(const std::vector<int64_t>& labels, const Centres& centres, int64_t first,
                                         int64_t last) const;

  // Each cluster's sum in double of its members' columns [first, last), the members added in the
  // order listed (cluster c's: members[offsets[c] .. offsets[c + 1])), on the points' device:
  // [k, last − first] row-major.
  std::vector<double> cluster_sums(const std::vector<int64_t>& members, const std::vector<int64_t>& offsets,
                                   int64_t first, int64_t last) const;

 private:
  // The centres as f32 [dim, m] (what the products take) and their squared norms in double.
  void transpose_centres(const Centres& centres, std::vector<float>& transposed, std::vector<double>& norms) const;

  Device device_;
  Tensor dev_, host_;
  Tensor norms_dev_;  // norms_ on the points' device
  const float* host_data_ = nullptr;  // host_'s values (data<T>() checks on every call)
  int64_t n_ = 0, dim_ = 0;
  int64_t rows_per_product_;
  std::vector<double> norms_;
};

}  // namespace mcdl::kmeans_detail
