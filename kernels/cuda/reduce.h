// Reductions on device buffers (the CUDA twins of kernels/cpu/reduce.h). The input is viewed as
// [outer, len, inner] with the reduced axis in the middle; callers ensure len >= 1. Sums run in
// double, in a fixed order for a given block size (no atomics). A long reduction with few
// outputs runs in two passes through caller-provided scratch (reduce_scratch_words). Launches
// are queued on the engine stream.
#pragma once
#include <cstdint>

namespace mcdl::cuda {

// 8-byte words of scratch (doubles for sum_axis, int64 for max_axis) these sizes need at the
// current block size; 0 when the reduction runs in one pass (scratch may then be null).
int64_t reduce_scratch_words(int64_t outer, int64_t len, int64_t inner);

// out[o, i] = (Σ_k x[o, k, i]) / divisor.
template <class T>
void sum_axis(const T* x, T* out, int64_t outer, int64_t len, int64_t inner, double divisor, double* scratch);
// dx[o, k, i] (=|+=) g[o, i] / divisor, every element of dx.
template <class T>
void sum_axis_backward(const T* g, T* dx, int64_t outer, int64_t len, int64_t inner, double divisor, bool overwrite);

// index[o, i] = the first k maximising x[o, k, i], NaN counting as the largest (PyTorch's
// argmax); values[o, i] = that element (values may be null).
template <class T>
void max_axis(const T* x, T* values, int64_t* index, int64_t outer, int64_t len, int64_t inner, int64_t* scratch);
// dx[o, k, i] (=|+=) g[o, i] where k == index[o, i], else 0.
template <class T>
void max_axis_backward(const T* g, const int64_t* index, T* dx, int64_t outer, int64_t len, int64_t inner,
                       bool overwrite);

// As cpu::nearest_from_products, with the same bits: one warp per point, each lane the first
// minimum of its centres, then the lowest index of the warp's minima.
void nearest_from_products(const float* products, const double* point_norms, const double* centre_norms, int64_t n,
                           int64_t m, int64_t* nearest);
// As cpu::assigned_squared_distances, with the same bits: a thread per point, each step rounded
// as the CPU rounds it (no fused multiply-add).
void assigned_squared_distances(const float* points, const int64_t* labels, const double* centres, int64_t n,
                                int64_t dim, double* d2);
// As cpu::cluster_sums, with the same bits: a thread per (cluster, column), adding the cluster's
// members in the order listed; neighbouring threads read neighbouring columns of a row.
void cluster_sums(const float* points, const int64_t* members, const int64_t* offsets, int64_t k, int64_t dim,
                  int64_t first, int64_t last, double* sums);

}  // namespace mcdl::cuda
