// MCDL's method primitives as engine ops on tensors, on whichever device holds them: the
// memory-bank rings behind mcdl/method/memory_bank.h and the credibility buckets of
// mcdl/method/credibility.h (docs/method.md §3). Their kernels are kernels/cpu/memory_bank.h (which
// describes the ring layout) and its CUDA twin.
#pragma once
#include <cstdint>

#include "engine/tensor.h"

namespace mcdl {

// The rings of a memory bank of N samples, μ entries each, over K classes.
struct BankRings {
  Tensor classes;   // i32 [N, μ]: the argmax class of each entry
  Tensor probs;     // f32 [N, μ, K]: its probability vector
  Tensor position;  // i64 [N]: the slot the next entry goes to
  Tensor filled;    // i64 [N]: how many entries the ring holds, at most μ
};

// Per queried sample: mode = the most frequent argmax class among the filled entries (ties: the
// class whose latest entry is the most recent; −1 for an empty ring) and count = how often it
// occurs (0 for an empty ring). Both i64 [n] on the bank's device.
struct Consistency {
  Tensor mode;
  Tensor count;
};

// The bank ops take `samples`, i64 [n] on the rings' device, each in [0, N): the callers check
// that range (first_invalid_index, engine/ops/indexing.h) to name the samples in their messages.

// Writes row i of probs (f32 [n, K]) into the ring of samples[i], rows in batch order: a sample
// named twice gets two entries, the later row the more recent.
void bank_update(BankRings& rings, const Tensor& samples, const Tensor& probs);
Consistency bank_consistency(const BankRings& rings, const Tensor& samples);
// The mean of each queried sample's filled entries: f32 [n, K] (zeros for an empty ring).
Tensor bank_mean_probs(const BankRings& rings, const Tensor& samples);

// With (a) count_w > 3μ/4, (b) count_s > μ/4, (c) mode_w == mode_s (strict comparisons on the
// real thresholds): high = (a)∧(b)∧(c), medium = (a)∧(b)∧¬(c), low otherwise. weak and strong
// are the two banks' consistency for the same samples (i64 [n], one device); the result is a
// u8 [n] tensor on that device holding 2 for high, 1 for medium, 0 for low (mcdl's Bucket).
Tensor credibility_buckets(const Consistency& weak, const Consistency& strong, int64_t mu);

}  // namespace mcdl
