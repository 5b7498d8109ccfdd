#include "mcdl/credibility.h"

#include "engine/ops/shape.h"  // concat
#include "engine/profile.h"

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

namespace {

// The rows of each bucket from the bucket values on the host.
template <class Value>
BucketRows rows_of_buckets(const Value* values, size_t n) {
  BucketRows rows;
  for (size_t i = 0; i < n; ++i) {
    switch (static_cast<Bucket>(values[i])) {
      case Bucket::high: rows.high.push_back(static_cast<int64_t>(i)); break;
      case Bucket::medium: rows.medium.push_back(static_cast<int64_t>(i)); break;
      case Bucket::low: rows.low.push_back(static_cast<int64_t>(i)); break;
      default: fail("rows_by_bucket: value ", static_cast<int64_t>(values[i]), " at ", i, " is not a bucket");
    }
  }
  return rows;
}

}  // namespace

BucketRows rows_by_bucket(const Tensor& buckets) {
  check(buckets.defined() && buckets.dtype() == DType::u8 && buckets.dim() == 1,
        "rows_by_bucket: expected a u8 [n] bucket tensor, got ", buckets.defined() ? buckets.str() : "undefined");
  const std::vector<uint8_t> values = buckets.to_vector<uint8_t>();
  return rows_of_buckets(values.data(), values.size());
}

SampleBuckets bucket_samples(const MemoryBank& bank_weak, const MemoryBank& bank_strong, const HostIndex& slots,
                             int64_t mu) {
  const ProfileRange range(slots.tensor().device(), "mcdl_buckets");
  SampleBuckets out;
  out.weak = bank_weak.consistency(slots);
  const Consistency strong = bank_strong.consistency(slots);
  out.buckets = credibility_buckets(out.weak, strong, mu);
  // One read-back for the buckets and the modes together.
  const size_t n = static_cast<size_t>(slots.size());
  std::vector<int64_t> host = concat({out.buckets.to(DType::i64), out.weak.mode}, 0).to_vector<int64_t>();
  BucketRows rows = rows_of_buckets(host.data(), n);
  out.high = std::move(rows.high);
  out.medium = std::move(rows.medium);
  out.weak_mode.assign(host.begin() + static_cast<std::ptrdiff_t>(n), host.end());
  return out;
}

}  // namespace mcdl
