#include "mcdl/method/credibility.h"

#include <numeric>

#include "engine/ops/shape.h"  // concat
#include "engine/profile.h"

namespace mcdl {

SampleBuckets bucket_samples(const MemoryBank& bank_weak, const MemoryBank& bank_strong, const HostIndex& slots,
                             int64_t mu) {
  const ProfileRange range(slots.tensor().device(), "mcdl_buckets");
  const Consistency weak = bank_weak.consistency(slots);
  const Tensor buckets = credibility_buckets(weak, bank_strong.consistency(slots), mu);
  // One read-back for the buckets and the modes together.
  const size_t n = static_cast<size_t>(slots.size());
  const std::vector<int64_t> host = concat({buckets.to(DType::i64), weak.mode}, 0).to_vector<int64_t>();
  SampleBuckets out;
  for (size_t i = 0; i < n; ++i) {
    switch (static_cast<Bucket>(host[i])) {
      case Bucket::high: out.high.push_back(static_cast<int64_t>(i)); break;
      case Bucket::medium: out.medium.push_back(static_cast<int64_t>(i)); break;
      case Bucket::low: out.low.push_back(static_cast<int64_t>(i)); break;
      default: fail("bucket_samples: value ", host[i], " at ", i, " is not a bucket");
    }
  }
  out.weak_mode.assign(host.begin() + static_cast<std::ptrdiff_t>(n), host.end());
  return out;
}

std::vector<int64_t> every_slot(int64_t n) {
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), int64_t{0});
  return all;
}

}  // namespace mcdl
