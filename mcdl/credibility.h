// MCDL's dual-consistency credibility buckets (mcdl-spec §3): each unlabelled sample of a batch
// is high, medium or low credibility from the consistency of its weak and strong banks.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ops/method.h"  // credibility_buckets: the u8 [n] buckets of a batch
#include "mcdl/memory_bank.h"

namespace mcdl {

// The values of credibility_buckets' result.
enum class Bucket : uint8_t { low = 0, medium = 1, high = 2 };

struct BucketCounts {
  int64_t high = 0, medium = 0, low = 0;
};

// Host-side summaries of a bucket tensor (copied to the host once).
BucketCounts count_buckets(const Tensor& buckets);
// The positions i of each bucket, ascending, from one copy of the bucket tensor to the host.
struct BucketRows {
  std::vector<int64_t> high, medium, low;
};
BucketRows rows_by_bucket(const Tensor& buckets);

// The samples at `slots` by bucket, from both banks' consistency: the weak
// bank's consistency, whose mode is a sample's pseudo-label (also on the host, `weak_mode`), the
// buckets (u8 [n]), and the positions i of the high and medium samples.
struct SampleBuckets {
  Consistency weak;
  Tensor buckets;
  std::vector<int64_t> high, medium, weak_mode;
};
SampleBuckets bucket_samples(const MemoryBank& bank_weak, const MemoryBank& bank_strong, const HostIndex& slots,
                             int64_t mu);

}  // namespace mcdl
