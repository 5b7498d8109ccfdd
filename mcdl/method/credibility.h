// MCDL's dual-consistency credibility buckets (docs/method.md §3): each unlabelled sample of a batch
// is high, medium or low credibility from the consistency of its weak and strong banks.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ops/method.h"  // credibility_buckets: the u8 [n] buckets of a batch
#include "mcdl/method/memory_bank.h"

namespace mcdl {

// The values of credibility_buckets' result.
enum class Bucket : uint8_t { low = 0, medium = 1, high = 2 };

struct BucketCounts {
  int64_t high = 0, medium = 0, low = 0;
};

// The samples at `slots` by bucket, from both banks' consistency: the positions i of each bucket,
// ascending, and each sample's weak-bank mode (its pseudo-label), all from one copy to the host.
struct SampleBuckets {
  std::vector<int64_t> high, medium, low, weak_mode;
  BucketCounts counts() const {
    return {static_cast<int64_t>(high.size()), static_cast<int64_t>(medium.size()), static_cast<int64_t>(low.size())};
  }
};
SampleBuckets bucket_samples(const MemoryBank& bank_weak, const MemoryBank& bank_strong, const HostIndex& slots,
                             int64_t mu);

// Slots 0..n-1: every sample of a bank, for the reports and the class cap that read them all.
std::vector<int64_t> every_slot(int64_t n);

}  // namespace mcdl
