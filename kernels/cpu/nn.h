// Fused CPU kernels for the neural-network ops of engine/ops/nn.h: one forward and one
// backward function per op (each maps to one CUDA kernel later). Rows are independent and run
// in parallel; every reduction inside a row accumulates in double in index order, so results
// do not depend on the thread count. Gradient kernels take `overwrite` (dst = value) or
// accumulate (dst += value); a null gradient pointer means that gradient is not wanted.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>
#include <vector>

#include "kernels/cpu/gelu_float.h"
#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {

// dst = value (overwrite) or dst += value, rounded once to T.
template <class T>
inline void write_grad(T& dst, double value, bool overwrite) {
  dst = overwrite ? static_cast<T>(value) : static_cast<T>(dst + value);
}

// ---- gelu: exact erf form 0.5·x·(1 + erf(x/√2)) (PyTorch nn.GELU, approximate='none') --------
// In T's own precision, as the CUDA kernel; float through gelu_float.h (the vector erf of
// erf_float.h: glibc's scalar erff took a fifth of a demo run), in blocks over the threads.
template <class T>
void gelu_forward(const T* x, T* y, int64_t n) {
  constexpr T inv_sqrt2 = static_cast<T>(1.0 / std::numbers::sqrt2);
  if constexpr (std::is_same_v<T, float>) {
    parallel_blocks(n, 4096, [&](int64_t begin, int64_t count) { gelu_float(x + begin, y + begin, count); });
  } else {
    parallel_for(n, [&](int64_t i) {
      const T v = x[i];
      y[i] = T(0.5) * v * (T(1) + std::erf(v * inv_sqrt2));
    });
  }
}

// d gelu/dx = Φ(x) + x·φ(x), with Φ, φ the standard normal CDF and density. Float in float, as
// the CUDA kernel (vector erf and exp: glibc's double erf and exp took a fifth of a demo run).
template <class T>
void gelu_backward(const T* x, const T* grad_out, T* grad_in, int64_t n, bool overwrite) {
  if constexpr (std::is_same_v<T, float>) {
    parallel_blocks(n, 4096, [&](int64_t begin, int64_t count) {
      gelu_backward_float(x + begin, grad_out + begin, grad_in + begin, count, overwrite);
    });
  } else {
    constexpr double inv_sqrt2 = 1.0 / std::numbers::sqrt2;
    constexpr double inv_sqrt_2pi = std::numbers::inv_sqrtpi * inv_sqrt2;
    parallel_for(n, [&](int64_t i) {
      const double v = x[i];
      const double slope = 0.5 * (1.0 + std::erf(v * inv_sqrt2)) + v * inv_sqrt_2pi * std::exp(-0.5 * v * v);
      write_grad(grad_in[i], grad_out[i] * slope, overwrite);
    });
  }
}

// ---- layer_norm over the last dimension (rows × d) ---------------------------------------------
// y = (x − mean)·rstd·gamma + beta with the biased variance, rstd = 1/√(var + eps) (PyTorch).
// gamma / beta may be null (no affine). Saves mean and rstd per row for the backward.
// R rows at a time, their sums side by side: each row's sums still add its elements in order (the
// same bits as one row at a time), but the R chains of dependent double additions overlap.
template <int R, class T>
void layer_norm_rows(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int64_t d, double eps) {
  double sum[R] = {}, squares[R] = {}, mu[R], rs[R];
  for (int64_t c = 0; c < d; ++c)
    for (int j = 0; j < R; ++j) sum[j] += x[j * d + c];
  for (int j = 0; j < R; ++j) mu[j] = sum[j] / static_cast<double>(d);
  for (int64_t c = 0; c < d; ++c)  // two passes: no cancellation for rows with a large mean
    for (int j = 0; j < R; ++j) squares[j] += (x[j * d + c] - mu[j]) * (x[j * d + c] - mu[j]);
  for (int j = 0; j < R; ++j) {
    rs[j] = 1.0 / std::sqrt(squares[j] / static_cast<double>(d) + eps);
    const T* xr = x + j * d;
    T* yr = y + j * d;
    for (int64_t c = 0; c < d; ++c) {
      double v = (xr[c] - mu[j]) * rs[j];
      if (gamma) v *= gamma[c];
      if (beta) v += beta[c];
      yr[c] = static_cast<T>(v);
    }
    mean[j] = static_cast<T>(mu[j]);
    rstd[j] = static_cast<T>(rs[j]);
  }
}

template <class T>
void layer_norm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int64_t rows,
                        int64_t d, double eps) {
  constexpr int group = 4;
  parallel_rows((rows + group - 1) / group, group * d, [&](int64_t g) {
    const int64_t first = g * group;
    if (first + group <= rows)
      return layer_norm_rows<group>(x + first * d, gamma, beta, y + first * d, mean + first, rstd + first, d, eps);
    for (int64_t r = first; r < rows; ++r)
      layer_norm_rows<1>(x + r * d, gamma, beta, y + r * d, mean + r, rstd + r, d, eps);
  });
}

// dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) with ĝ = g·gamma and x̂ = (x − mean)·rstd.
template <class T>
void layer_norm_backward_input(const T* x, const T* gamma, const T* mean, const T* rstd, const T* grad_out,
                               T* grad_x, int64_t rows, int64_t d, bool overwrite) {
  parallel_rows(rows, d, [&](int64_t r) {
    const T* xr = x + r * d;
    const T* gr = grad_out + r * d;
    T* dxr = grad_x + r * d;
    const double mu = mean[r], rs = rstd[r];
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t c = 0; c < d; ++c) {
      const double gh = gamma ? gr[c] * static_cast<double>(gamma[c]) : static_cast<double>(gr[c]);
      sum_g += gh;
      sum_gx += gh * (xr[c] - mu) * rs;
    }
    const double mean_g = sum_g / static_cast<double>(d), mean_gx = sum_gx / static_cast<double>(d);
    for (int64_t c = 0; c < d; ++c) {
      const double gh = gamma ? gr[c] * static_cast<double>(gamma[c]) : static_cast<double>(gr[c]);
      write_grad(dxr[c], rs * (gh - mean_g - (xr[c] - mu) * rs * mean_gx), overwrite);
    }
  });
}

// Elements of scratch the affine backward needs: none (its partial sums stay in double here).
inline int64_t layer_norm_affine_scratch_size(int64_t, int64_t) { return 0; }
// dgamma = Σ_rows g·x̂, dbeta = Σ_rows g. Rows are summed in fixed blocks whose partial sums
// are added in block order (deterministic for any thread count). Either output may be null.
// dgamma[c] is written before dbeta[c], so the two may share one buffer.
template <class T>
void layer_norm_backward_affine(const T* x, const T* mean, const T* rstd, const T* grad_out, T* grad_gamma,
                                bool overwrite_gamma, T* grad_beta, bool overwrite_beta, T* /*scratch*/, int64_t rows,
                                int64_t d) {
  constexpr int64_t block = 256;
  const int64_t blocks = (rows + block - 1) / block;
  std::vector<double> partial_gamma(static_cast<size_t>(blocks * d), 0.0);
  std::vector<double> partial_beta(static_cast<size_t>(blocks * d), 0.0);
  parallel_rows(blocks, block * d, [&](int64_t b) {
    double* acc_gamma = partial_gamma.data() + b * d;
    double* acc_beta = partial_beta.data() + b * d;
    const int64_t end = std::min((b + 1) * block, rows);
    for (int64_t r = b * block; r < end; ++r) {
      const double mu = mean[r], rs = rstd[r];
      for (int64_t c = 0; c < d; ++c) {
        const double g = grad_out[r * d + c];
        acc_gamma[c] += g * (x[r * d + c] - mu) * rs;
        acc_beta[c] += g;
      }
    }
  });
  for (int64_t c = 0; c < d; ++c) {
    double sum_gamma = 0.0, sum_beta = 0.0;
    for (int64_t b = 0; b < blocks; ++b) {
      sum_gamma += partial_gamma[static_cast<size_t>(b * d + c)];
      sum_beta += partial_beta[static_cast<size_t>(b * d + c)];
    }
    if (grad_gamma) write_grad(grad_gamma[c], sum_gamma, overwrite_gamma);
    if (grad_beta) write_grad(grad_beta[c], sum_beta, overwrite_beta);
  }
}

// ---- softmax / log_softmax over the last dimension ---------------------------------------------
// log Σ exp(x) of one row, with the row maximum subtracted first so no exp overflows.
template <class T>
double row_log_sum_exp(const T* x, int64_t d) {
  double top = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < d; ++c) top = std::max(top, static_cast<double>(x[c]));
  double sum = 0.0;
  for (int64_t c = 0; c < d; ++c) sum += std::exp(x[c] - top);
  return top + std::log(sum);
}

// In T's own precision, as the CUDA kernel computes it: the attention's softmax is the CPU
// forward's largest pass after the products, and one exp per element in float costs a fraction
// of two in double (measured: a quarter of ViT-B/16's CPU forward before).
template <class T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t d) {
  parallel_rows(rows, d, [&](int64_t r) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    T top = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < d; ++c) top = std::max(top, xr[c]);
    T sum = 0;
    for (int64_t c = 0; c < d; ++c) {
      yr[c] = std::exp(xr[c] - top);
      sum += yr[c];
    }
    const T inverse = T(1) / sum;
    for (int64_t c = 0; c < d; ++c) yr[c] *= inverse;
  });
}

template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t d) {
  parallel_rows(rows, d, [&](int64_t r) {
    const double lse = row_log_sum_exp(x + r * d, d);
    for (int64_t c = 0; c < d; ++c) y[r * d + c] = static_cast<T>(x[r * d + c] - lse);
  });
}

// From the output y = softmax(x): dx = y·(g − Σ g·y).
template <class T>
void softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite) {
  parallel_rows(rows, d, [&](int64_t r) {
    const T* yr = y + r * d;
    const T* gr = grad_out + r * d;
    double dot = 0.0;
    for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(gr[c]) * yr[c];
    for (int64_t c = 0; c < d; ++c) write_grad(grad_x[r * d + c], yr[c] * (gr[c] - dot), overwrite);
  });
}

// From the output y = log_softmax(x): dx = g − exp(y)·Σ g.
template <class T>
void log_softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite) {
  parallel_rows(rows, d, [&](int64_t r) {
    const T* yr = y + r * d;
    const T* gr = grad_out + r * d;
    double sum = 0.0;
    for (int64_t c = 0; c < d; ++c) sum += gr[c];
    for (int64_t c = 0; c < d; ++c)
      write_grad(grad_x[r * d + c], gr[c] - std::exp(static_cast<double>(yr[c])) * sum, overwrite);
  });
}

// ---- l2_normalize: y = x / max(‖x‖₂, eps) per row (PyTorch F.normalize) -------------------------
template <class T>
double row_l2_norm(const T* x, int64_t d) {
  double squares = 0.0;  // in double: squares of small f32 values do not underflow
  for (int64_t c = 0; c < d; ++c) squares += static_cast<double>(x[c]) * x[c];
  return std::sqrt(squares);
}

template <class T>
void l2_normalize_forward(const T* x, T* y, T* norm, int64_t rows, int64_t d, double eps) {
  parallel_rows(rows, d, [&](int64_t r) {
    const double n = row_l2_norm(x + r * d, d);
    const double denom = std::max(n, eps);
    for (int64_t c = 0; c < d; ++c) y[r * d + c] = static_cast<T>(x[r * d + c] / denom);
    norm[r] = static_cast<T>(n);
  });
}

// Where the norm is at least eps: dx = g/n − x·(x·g)/n³. Below eps the denominator is the
// constant eps, so dx = g/eps (PyTorch's clamp_min passes the gradient where norm >= eps).
template <class T>
void l2_normalize_backward(const T* x, const T* norm, const T* grad_out, T* grad_x, int64_t rows, int64_t d,
                           double eps, bool overwrite) {
  parallel_rows(rows, d, [&](int64_t r) {
    const T* xr = x + r * d;
    const T* gr = grad_out + r * d;
    const double n = norm[r];
    if (n >= eps) {
      double dot = 0.0;
      for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(xr[c]) * gr[c];
      const double scale = dot / (n * n * n);
      for (int64_t c = 0; c < d; ++c) write_grad(grad_x[r * d + c], gr[c] / n - xr[c] * scale, overwrite);
    } else {
      for (int64_t c = 0; c < d; ++c) write_grad(grad_x[r * d + c], gr[c] / eps, overwrite);
    }
  });
}

// ---- weight_norm: w[r, :] = g[r]·v[r, :] / ‖v[r, :]‖ (PyTorch weight_norm, dim=0) --------------
template <class T>
void weight_norm_forward(const T* v, const T* g, T* w, T* norm, int64_t rows, int64_t d) {
  parallel_rows(rows, d, [&](int64_t r) {
    const double n = row_l2_norm(v + r * d, d);
    const double scale = g[r] / n;
    for (int64_t c = 0; c < d; ++c) w[r * d + c] = static_cast<T>(v[r * d + c] * scale);
    norm[r] = static_cast<T>(n);
  });
}

// With gw the gradient of w: dg = (v·gw)/n and dv = (g/n)·(gw − v·(v·gw)/n²). Either output
// may be null; per row dv is written before dg, so the two may share one buffer.
template <class T>
void weight_norm_backward(const T* v, const T* g, const T* norm, const T* grad_w, T* grad_v, bool overwrite_v,
                          T* grad_g, bool overwrite_g, int64_t rows, int64_t d) {
  parallel_rows(rows, d, [&](int64_t r) {
    const T* vr = v + r * d;
    const T* gwr = grad_w + r * d;
    const double n = norm[r];
    double dot = 0.0;
    for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(vr[c]) * gwr[c];
    if (grad_v) {
      const double scale = g[r] / n, projection = dot / (n * n);
      for (int64_t c = 0; c < d; ++c) write_grad(grad_v[r * d + c], scale * (gwr[c] - vr[c] * projection), overwrite_v);
    }
    if (grad_g) write_grad(grad_g[r], dot / n, overwrite_g);
  });
}

}  // namespace mcdl::cpu
