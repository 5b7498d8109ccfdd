#include "mcdl/evaluation/kmeans_points.h"

#include <algorithm>

#include "engine/autograd.h"
#include "engine/ops/indexing.h"
#include "engine/ops/linalg.h"
#include "engine/ops/reduce.h"
#include "engine/ops/shape.h"
#include "engine/parallel.h"
#include "engine/shards.h"

namespace mcdl::kmeans_detail {

std::vector<std::pair<int64_t, int64_t>> Split::shares(int64_t count) const {
  return Shards::ranges(count, split() ? world_->size() : 1);
}

std::vector<int64_t> share_sizes(const std::vector<std::pair<int64_t, int64_t>>& shares, int64_t per_item) {
  std::vector<int64_t> sizes;
  for (const auto& [begin, end] : shares) sizes.push_back((end - begin) * per_item);
  return sizes;
}

Points::Points(const Tensor& features, int64_t rows_per_product)
    : device_(features.device()), rows_per_product_(rows_per_product) {
  dev_ = features.dtype() == DType::f32 ? features : features.to(DType::f32);
  host_ = dev_.to(Device::cpu());
  host_data_ = host_.data<float>();
  n_ = dev_.size(0);
  dim_ = dev_.size(1);
  const float* x = host_data_;
  norms_.resize(static_cast<size_t>(n_));
  parallel_rows(n_, dim_, [&](int64_t i) {
    double s = 0.0;
    for (int64_t d = 0; d < dim_; ++d) s += static_cast<double>(x[i * dim_ + d]) * x[i * dim_ + d];
    norms_[i] = s;
  });
  norms_dev_ = from_vector(norms_, {n_}, device_);
}

int64_t Points::block_rows(int64_t m) const {
  if (rows_per_product_ > 0) return rows_per_product_;
  return std::max<int64_t>(256, (int64_t{1} << 22) / std::max<int64_t>(m, 1));
}

void Points::squared_distances(const Centres& centres, std::vector<double>& out) const {
  const int64_t m = centres.k;
  std::vector<float> transposed(static_cast<size_t>(dim_ * m));
  std::vector<double> c_norms(static_cast<size_t>(m), 0.0);
  transpose_centres(centres, transposed, c_norms);
  const Tensor ct = from_vector(transposed, {dim_, m}, device_);
  out.resize(static_cast<size_t>(n_ * m));
  const int64_t block = block_rows(m);
  NoGradGuard no_grad;
  for (int64_t start = 0; start < n_; start += block) {
    const int64_t end = std::min(n_, start + block);
    const Tensor products = matmul(slice(dev_, 0, start, end), ct).to(Device::cpu());
    const float* p = products.data<float>();
    parallel_rows(end - start, m, [&](int64_t r) {
      const int64_t i = start + r;
      for (int64_t c = 0; c < m; ++c) out[i * m + c] = std::max(0.0, norms_[i] - 2.0 * p[r * m + c] + c_norms[c]);
    });
  }
}

std::vector<int64_t> Points::nearest(const Centres& centres, const Split& split) const {
  const int64_t m = centres.k, block = block_rows(m);
  std::vector<std::pair<int64_t, int64_t>> rows = split.shares((n_ + block - 1) / block);  // in blocks
  for (auto& [begin, end] : rows) begin = std::min(n_, begin * block), end = std::min(n_, end * block);
  const auto [first, last] = split.own(rows);
  std::vector<float> transposed(static_cast<size_t>(dim_ * m));
  std::vector<double> c_norms(static_cast<size_t>(m), 0.0);
  transpose_centres(centres, transposed, c_norms);
  const Tensor ct = from_vector(transposed, {dim_, m}, device_), cn = from_vector(c_norms, {m}, device_);
  // The blocks' indices stay where they are made and are read once, so a GPU never waits for
  // the host between blocks.
  std::vector<Tensor> blocks;
  NoGradGuard no_grad;
  for (int64_t start = first; start < last; start += block) {
    const int64_t stop = std::min(last, start + block);
    blocks.push_back(
        nearest_from_products(matmul(slice(dev_, 0, start, stop), ct), slice(norms_dev_, 0, start, stop), cn));
  }
  const std::vector<int64_t> labels = blocks.empty() ? std::vector<int64_t>() : concat(blocks, 0).to_vector<int64_t>();
  return split.gathered(labels, share_sizes(rows));
}

std::vector<double> Points::assigned_distances(const std::vector<int64_t>& labels, const Centres& centres,
                                               int64_t first, int64_t last) const {
  NoGradGuard no_grad;
  const std::vector<int64_t> own(labels.begin() + first, labels.begin() + last);
  return assigned_squared_distances(slice(dev_, 0, first, last), from_vector(own, {last - first}, device_),
                                    from_vector(centres.values, {centres.k, dim_}, device_))
      .to_vector<double>();
}

std::vector<double> Points::cluster_sums(const std::vector<int64_t>& members, const std::vector<int64_t>& offsets,
                                         int64_t first, int64_t last) const {
  NoGradGuard no_grad;
  const auto size = [](const std::vector<int64_t>& v) { return static_cast<int64_t>(v.size()); };
  return mcdl::cluster_sums(dev_, from_vector(members, {size(members)}, device_),
                            from_vector(offsets, {size(offsets)}, device_), first, last)
      .to_vector<double>();
}

void Points::transpose_centres(const Centres& centres, std::vector<float>& transposed,
                               std::vector<double>& norms) const {
  const int64_t m = centres.k;
  for (int64_t c = 0; c < m; ++c)
    for (int64_t d = 0; d < dim_; ++d) {
      const float v = static_cast<float>(centres.row(c)[d]);
      transposed[d * m + c] = v;
      norms[c] += static_cast<double>(v) * v;
    }
}

}  // namespace mcdl::kmeans_detail
