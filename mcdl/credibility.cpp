#include "mcdl/credibility.h"

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

BucketRows rows_by_bucket(const Tensor& buckets) {
  check(buckets.defined() && buckets.dtype() == DType::u8 && buckets.dim() == 1,
        "rows_by_bucket: expected a u8 [n] bucket tensor, got ", buckets.defined() ? buckets.str() : "undefined");
  const std::vector<uint8_t> values = buckets.to_vector<uint8_t>();
  BucketRows rows;
  for (size_t i = 0; i < values.size(); ++i) {
    switch (static_cast<Bucket>(values[i])) {
      case Bucket::high: rows.high.push_back(static_cast<int64_t>(i)); break;
      case Bucket::medium: rows.medium.push_back(static_cast<int64_t>(i)); break;
      case Bucket::low: rows.low.push_back(static_cast<int64_t>(i)); break;
      default: fail("rows_by_bucket: value ", int{values[i]}, " at ", i, " is not a bucket");
    }
  }
  return rows;
}

SampleBuckets bucket_samples(const MemoryBank& bank_weak, const MemoryBank& bank_strong, const RowIndex& slots,
                             int64_t mu) {
  const ProfileRange range(slots.tensor().device(), "mcdl_buckets");
  SampleBuckets out;
  out.weak = bank_weak.consistency(slots);
  const Consistency strong = bank_strong.consistency(slots);
  out.buckets = credibility_buckets(out.weak, strong, mu);
  BucketRows rows = rows_by_bucket(out.buckets);  // one read-back for both lists
  out.high = std::move(rows.high);
  out.medium = std::move(rows.medium);
  out.weak_mode = out.weak.mode.to(Device::cpu()).to_vector<int64_t>();
  return out;
}

}  // namespace mcdl
