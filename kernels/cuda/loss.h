// CUDA kernels for the losses of engine/ops/loss.h (mean reduction), the device twins of
// kernels/cpu/loss.h. A forward writes per-row terms (or per-block partial sums for mse) into
// device scratch and a second kernel adds them in a fixed order into the 0-dim `loss`: the
// same bits on every run. A backward reads the upstream gradient from device memory
// (`grad_loss`, one value) and divides it by the count itself, so nothing is copied to the
// host; it writes (overwrite) or adds into each wanted gradient (null pointer: not wanted).
#pragma once
#include <cstdint>

namespace mcdl::cuda {

// Elements of T the cross-entropy forwards need as device scratch (row_terms): one per row.
inline int64_t cross_entropy_scratch_size(int64_t rows) { return rows; }

// ---- cross_entropy with class indices (already checked to lie in [0, classes)) ----------------
// Saves log Σ exp per row in `lse`; `row_terms` is scratch for `rows` values.
template <class T, class Index>
void cross_entropy_forward(const T* logits, const Index* targets, T* lse, T* row_terms, T* loss, int64_t rows,
                           int64_t classes);
// dlogits = (grad_loss/rows)·(softmax(logits) − onehot(t)).
template <class T, class Index>
void cross_entropy_backward(const T* logits, const Index* targets, const T* lse, const T* grad_loss, T* grad_logits,
                            int64_t rows, int64_t classes, bool overwrite);

// ---- cross_entropy with probability targets -----------------------------------------------------
template <class T>
void cross_entropy_soft_forward(const T* logits, const T* probs, T* lse, T* row_terms, T* loss, int64_t rows,
                                int64_t classes);
// Per element dlogits is written before dprobs, so the two may share one buffer.
template <class T>
void cross_entropy_soft_backward(const T* logits, const T* probs, const T* lse, const T* grad_loss, T* grad_logits,
                                 bool overwrite_logits, T* grad_probs, bool overwrite_probs, int64_t rows,
                                 int64_t classes);

// ---- mse_loss -----------------------------------------------------------------------------------
// Elements of T the forward needs as device scratch for n elements (one per partial sum).
int64_t mse_scratch_size(int64_t n);
template <class T>
void mse_forward(const T* a, const T* b, T* scratch, T* loss, int64_t n);
// Per element da is written before db (they may share a buffer).
template <class T>
void mse_backward(const T* a, const T* b, const T* grad_loss, T* grad_a, bool overwrite_a, T* grad_b, bool overwrite_b,
                  int64_t n);

}  // namespace mcdl::cuda
