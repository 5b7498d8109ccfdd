// Fused CPU kernels for the losses of engine/ops/loss.h, mean reduction (PyTorch default), with
// the arguments of their CUDA twins (kernels/cuda/loss.h). A forward computes per-row terms in
// parallel and adds them in row order in double (deterministic for any thread count) and writes
// the mean into the 0-dim `loss`; it needs no scratch (scratch sizes are 0, the pointers unused).
// A backward reads the upstream gradient `grad_loss` (one value), divides it by the count, and
// writes (overwrite) or adds into each wanted gradient (null pointer: not wanted).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/nn.h"
#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {

// Sum of row_term(r) over rows, terms computed in parallel and added in row order.
template <class F>
double ordered_row_sum(int64_t rows, int64_t row_cost, F&& row_term) {
  std::vector<double> terms(static_cast<size_t>(rows));
  parallel_rows(rows, row_cost, [&](int64_t r) { terms[static_cast<size_t>(r)] = row_term(r); });
  double total = 0.0;
  for (double t : terms) total += t;
  return total;
}

// Elements of scratch the cross-entropy forwards need (row_terms): none.
inline int64_t cross_entropy_scratch_size(int64_t) { return 0; }

// ---- cross_entropy with class indices: mean_n (lse_n − logits[n, t_n]) ------------------------
// Targets must already be checked to lie in [0, classes). Saves log Σ exp per row in `lse`.
template <class T, class Index>
void cross_entropy_forward(const T* logits, const Index* targets, T* lse, T* /*row_terms*/, T* loss, int64_t rows,
                           int64_t classes) {
  const double total = ordered_row_sum(rows, classes, [&](int64_t r) {
    const double row_lse = row_log_sum_exp(logits + r * classes, classes);
    lse[r] = static_cast<T>(row_lse);
    return row_lse - logits[r * classes + static_cast<int64_t>(targets[r])];
  });
  *loss = static_cast<T>(total / static_cast<double>(rows));
}

// dlogits = scale·(softmax(logits) − onehot(t)), scale = grad_loss / rows.
template <class T, class Index>
void cross_entropy_backward(const T* logits, const Index* targets, const T* lse, const T* grad_loss, T* grad_logits,
                            int64_t rows, int64_t classes, bool overwrite) {
  const double scale = static_cast<double>(*grad_loss) / static_cast<double>(rows);
  parallel_rows(rows, classes, [&](int64_t r) {
    const int64_t target = static_cast<int64_t>(targets[r]);
    for (int64_t c = 0; c < classes; ++c) {
      const double p = std::exp(logits[r * classes + c] - static_cast<double>(lse[r]));
      write_grad(grad_logits[r * classes + c], scale * (p - (c == target ? 1.0 : 0.0)), overwrite);
    }
  });
}

// ---- cross_entropy with probability targets: mean_n Σ_c p_nc·(lse_n − logits_nc) ----------------
template <class T>
void cross_entropy_soft_forward(const T* logits, const T* probs, T* lse, T* /*row_terms*/, T* loss, int64_t rows,
                                int64_t classes) {
  const double total = ordered_row_sum(rows, classes, [&](int64_t r) {
    const double row_lse = row_log_sum_exp(logits + r * classes, classes);
    lse[r] = static_cast<T>(row_lse);
    double term = 0.0;
    for (int64_t c = 0; c < classes; ++c) term += probs[r * classes + c] * (row_lse - logits[r * classes + c]);
    return term;
  });
  *loss = static_cast<T>(total / static_cast<double>(rows));
}

// dlogits = scale·(softmax·Σ_c p − p), dprobs = scale·(lse − logits) = −scale·log_softmax with
// scale = grad_loss / rows. Per element dlogits is written before dprobs, so the two may share
// one buffer.
template <class T>
void cross_entropy_soft_backward(const T* logits, const T* probs, const T* lse, const T* grad_loss, T* grad_logits,
                                 bool overwrite_logits, T* grad_probs, bool overwrite_probs, int64_t rows,
                                 int64_t classes) {
  const double scale = static_cast<double>(*grad_loss) / static_cast<double>(rows);
  parallel_rows(rows, classes, [&](int64_t r) {
    const T* lr = logits + r * classes;
    const T* pr = probs + r * classes;
    const double row_lse = lse[r];
    double prob_sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) prob_sum += pr[c];
    for (int64_t c = 0; c < classes; ++c) {
      const double log_p = lr[c] - row_lse;
      if (grad_logits)
        write_grad(grad_logits[r * classes + c], scale * (std::exp(log_p) * prob_sum - pr[c]), overwrite_logits);
      if (grad_probs) write_grad(grad_probs[r * classes + c], -scale * log_p, overwrite_probs);
    }
  });
}

// ---- mse_loss: mean((a − b)²) -------------------------------------------------------------------
inline int64_t mse_scratch_size(int64_t) { return 0; }
template <class T>
void mse_forward(const T* a, const T* b, T* /*scratch*/, T* loss, int64_t n) {
  const double total = deterministic_sum(n, [&](int64_t i) {
    const double diff = static_cast<double>(a[i]) - b[i];
    return diff * diff;
  });
  *loss = static_cast<T>(total / static_cast<double>(n));
}

// da = scale·2·(a − b), db = −da with scale = grad_loss / n. Per element da is written before db
// (they may share a buffer).
template <class T>
void mse_backward(const T* a, const T* b, const T* grad_loss, T* grad_a, bool overwrite_a, T* grad_b,
                  bool overwrite_b, int64_t n) {
  const double scale = static_cast<double>(*grad_loss) / static_cast<double>(n);
  parallel_for(n, [&](int64_t i) {
    const double d = 2.0 * scale * (static_cast<double>(a[i]) - b[i]);
    if (grad_a) write_grad(grad_a[i], d, overwrite_a);
    if (grad_b) write_grad(grad_b[i], -d, overwrite_b);
  });
}

}  // namespace mcdl::cpu
