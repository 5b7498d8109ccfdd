// CUDA kernels for the neural-network ops of engine/ops/nn.h, the device twins of
// kernels/cpu/nn.h with the same arguments, saved per-row values and write order. Rows are the
// last dimension; each row is reduced by one block in a fixed tree order (deterministic), with
// T accumulators. Gradient kernels take `overwrite` (dst = value) or accumulate (dst += value);
// a null gradient pointer means that gradient is not wanted. Launches go on the engine stream.
#pragma once
#include <cstdint>

namespace mcdl::cuda {

template <class T>
void gelu_forward(const T* x, T* y, int64_t n);
template <class T>
void gelu_backward(const T* x, const T* grad_out, T* grad_in, int64_t n, bool overwrite);

// Saves mean and rstd per row; gamma / beta may be null.
template <class T>
void layer_norm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int64_t rows, int64_t d,
                        double eps);
template <class T>
void layer_norm_backward_input(const T* x, const T* gamma, const T* mean, const T* rstd, const T* grad_out, T* grad_x,
                               int64_t rows, int64_t d, bool overwrite);
// Elements of T the affine backward needs as device scratch for its per-row-block partial sums.
int64_t layer_norm_affine_scratch_size(int64_t rows, int64_t d);
// dgamma = Σ_rows g·x̂, dbeta = Σ_rows g as column sums over fixed blocks of rows whose partials
// (in `scratch`) a second kernel adds in block order. dgamma[c] is written before dbeta[c].
template <class T>
void layer_norm_backward_affine(const T* x, const T* mean, const T* rstd, const T* grad_out, T* grad_gamma,
                                bool overwrite_gamma, T* grad_beta, bool overwrite_beta, T* scratch, int64_t rows,
                                int64_t d);

template <class T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t d);
template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t d);
template <class T>
void softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite);
template <class T>
void log_softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite);

template <class T>
void l2_normalize_forward(const T* x, T* y, T* norm, int64_t rows, int64_t d, double eps);
template <class T>
void l2_normalize_backward(const T* x, const T* norm, const T* grad_out, T* grad_x, int64_t rows, int64_t d, double eps,
                           bool overwrite);

// g holds one value per row (device memory). Per row dv is written before dg.
template <class T>
void weight_norm_forward(const T* v, const T* g, T* w, T* norm, int64_t rows, int64_t d);
template <class T>
void weight_norm_backward(const T* v, const T* g, const T* norm, const T* grad_w, T* grad_v, bool overwrite_v,
                          T* grad_g, bool overwrite_g, int64_t rows, int64_t d);

}  // namespace mcdl::cuda
