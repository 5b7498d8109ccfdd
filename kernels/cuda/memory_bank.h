// MCDL's memory banks, credibility buckets and one-hot targets on device buffers (the CUDA
// twins of kernels/cpu/memory_bank.h, which describes the ring layout). Launches are queued on
// the engine stream; every pointer is a device pointer.
#pragma once
#include <cstdint>

namespace mcdl::cuda {

// int64s of device scratch bank_update needs per written row.
inline constexpr int64_t bank_update_scratch_per_row = 3;

// The same result as cpu::bank_update (rows written in batch order) without a sequential loop:
// row i's slot is position[s] + (rows before i naming s), and of a sample named more than mu
// times only the last mu rows are written, so no two rows write the same slot. Counting the
// earlier rows costs O(n) per row: meant for a batch, not for millions of rows.
// scratch: bank_update_scratch_per_row · n int64s.
void bank_update(const int64_t* samples, const float* probs, int64_t n, int64_t classes, int64_t mu,
                 int32_t* ring_classes, float* ring_probs, int64_t* position, int64_t* filled, int64_t* scratch);

void bank_consistency(const int64_t* samples, int64_t n, int64_t mu, const int32_t* ring_classes,
                      const int64_t* position, const int64_t* filled, int64_t* mode, int64_t* count);

void bank_mean_probs(const int64_t* samples, int64_t n, int64_t classes, int64_t mu, const float* ring_probs,
                     const int64_t* filled, float* out);

void credibility_buckets(const int64_t* mode_w, const int64_t* count_w, const int64_t* mode_s, const int64_t* count_s,
                         int64_t n, int64_t mu, uint8_t* out);

template <class T>
void one_hot(const int64_t* classes, int64_t n, int64_t num_classes, T* out);

}  // namespace mcdl::cuda
