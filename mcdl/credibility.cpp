#include "mcdl/credibility.h"

namespace mcdl {

BucketCounts count_buckets(const Tensor& buckets) {
  check(buckets.defined() && buckets.dtype() == DType::u8 && buckets.dim() == 1,
        "count_buckets: expected a u8 [n] bucket tensor, got ", buckets.defined() ? buckets.str() : "undefined");
  BucketCounts counts;
  for (uint8_t b : buckets.to_vector<uint8_t>()) {
    switch (static_cast<Bucket>(b)) {
      case Bucket::high: ++counts.high; break;
      case Bucket::medium: ++counts.medium; break;
      case Bucket::low: ++counts.low; break;
      default: fail("count_buckets: value ", int{b}, " is not a bucket");
    }
  }
  return counts;
}

std::vector<int64_t> rows_in_bucket(const Tensor& buckets, Bucket bucket) {
  check(buckets.defined() && buckets.dtype() == DType::u8 && buckets.dim() == 1,
        "rows_in_bucket: expected a u8 [n] bucket tensor, got ", buckets.defined() ? buckets.str() : "undefined");
  const std::vector<uint8_t> values = buckets.to_vector<uint8_t>();
  std::vector<int64_t> rows;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] == static_cast<uint8_t>(bucket)) rows.push_back(static_cast<int64_t>(i));
  return rows;
}

}  // namespace mcdl
