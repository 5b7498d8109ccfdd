// MCDL's dual-consistency credibility buckets (mcdl-spec §3): each unlabelled sample of a batch
// is high, medium or low credibility from the consistency of its weak and strong banks.
#pragma once
#include <cstdint>
#include <vector>

#include "mcdl/memory_bank.h"

namespace mcdl {

enum class Bucket : uint8_t { low = 0, medium = 1, high = 2 };

// With (a) count_w > 3μ/4, (b) count_s > μ/4, (c) mode_w == mode_s (strict comparisons on the
// real thresholds): high = (a)∧(b)∧(c), medium = (a)∧(b)∧¬(c), low otherwise. weak and strong
// are the two banks' consistency for the same samples (i64 [n], one device); the result is a
// u8 [n] tensor of Bucket values on that device.
Tensor credibility_buckets(const Consistency& weak, const Consistency& strong, int64_t mu);

struct BucketCounts {
  int64_t high = 0, medium = 0, low = 0;
};

// Host-side summaries of a bucket tensor (copied to the host once).
BucketCounts count_buckets(const Tensor& buckets);
// The positions i with buckets[i] == bucket, ascending.
std::vector<int64_t> rows_in_bucket(const Tensor& buckets, Bucket bucket);

}  // namespace mcdl
