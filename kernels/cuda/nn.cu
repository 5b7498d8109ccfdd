#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/nn.h"
#include "kernels/cuda/row_kernels.h"

namespace mcdl::cuda {
namespace {

// ---- gelu: exact erf form (PyTorch nn.GELU, approximate='none') --------------------------------
template <class T>
__global__ void gelu_forward_kernel(const T* x, T* y, int64_t n) {
  const T inv_sqrt2 = static_cast<T>(0.70710678118654752440);
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const T v = x[i];
    y[i] = T(0.5) * v * (T(1) + erf_of(v * inv_sqrt2));
  }
}

// d gelu/dx = Φ(x) + x·φ(x).
template <class T>
__global__ void gelu_backward_kernel(const T* x, const T* grad_out, T* grad_in, int64_t n, bool overwrite) {
  const T inv_sqrt2 = static_cast<T>(0.70710678118654752440);
  const T inv_sqrt_2pi = static_cast<T>(0.39894228040143267794);
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const T v = x[i];
    const T slope = T(0.5) * (T(1) + erf_of(v * inv_sqrt2)) + v * inv_sqrt_2pi * exp_of(T(-0.5) * v * v);
    write_grad(grad_in[i], grad_out[i] * slope, overwrite);
  }
}

// ---- layer_norm ----------------------------------------------------------------------------------
template <class T>
__global__ void layer_norm_forward_kernel(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                                          int64_t rows, int64_t d, double eps) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    T sum = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) sum += xr[c];
    const T mu = block_sum(sum, scratch) / static_cast<T>(d);
    T squares = 0;  // two passes: no cancellation for rows with a large mean
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) squares += (xr[c] - mu) * (xr[c] - mu);
    const T rs = T(1) / sqrt_of(block_sum(squares, scratch) / static_cast<T>(d) + static_cast<T>(eps));
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      T v = (xr[c] - mu) * rs;
      if (gamma) v *= gamma[c];
      if (beta) v += beta[c];
      yr[c] = v;
    }
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

// dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) with ĝ = g·gamma and x̂ = (x − mean)·rstd.
template <class T>
__global__ void layer_norm_backward_input_kernel(const T* x, const T* gamma, const T* mean, const T* rstd,
                                                 const T* grad_out, T* grad_x, int64_t rows, int64_t d,
                                                 bool overwrite) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    const T* gr = grad_out + r * d;
    T* dxr = grad_x + r * d;
    const T mu = mean[r], rs = rstd[r];
    T sum_g = 0, sum_gx = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      const T gh = gamma ? gr[c] * gamma[c] : gr[c];
      sum_g += gh;
      sum_gx += gh * (xr[c] - mu) * rs;
    }
    const T mean_g = block_sum(sum_g, scratch) / static_cast<T>(d);
    const T mean_gx = block_sum(sum_gx, scratch) / static_cast<T>(d);
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      const T gh = gamma ? gr[c] * gamma[c] : gr[c];
      write_grad(dxr[c], rs * (gh - mean_g - (xr[c] - mu) * rs * mean_gx), overwrite);
    }
  }
}

// Rows per partial sum of the affine backward. A constant (not the block size), so the
// summation order and thus the result is the same at every block size.
constexpr int64_t affine_rows_per_partial = 32;

int64_t affine_partials(int64_t rows) { return (rows + affine_rows_per_partial - 1) / affine_rows_per_partial; }

// One thread per (block of rows b, column c): the column sums over the rows of block b, in row
// order, into partial_gamma/partial_beta[b·d + c]. Neighbouring threads read neighbouring columns.
template <class T>
__global__ void layer_norm_affine_partials_kernel(const T* x, const T* mean, const T* rstd, const T* grad_out,
                                                  T* partial_gamma, T* partial_beta, int64_t partials, int64_t rows,
                                                  int64_t d) {
  const int64_t items = partials * d;
  for (int64_t item = grid_index(); item < items; item += grid_stride()) {
    const int64_t first = item / d * affine_rows_per_partial, c = item % d;
    const int64_t end = first + affine_rows_per_partial < rows ? first + affine_rows_per_partial : rows;
    T acc_gamma = 0, acc_beta = 0;
    for (int64_t r = first; r < end; ++r) {
      const T g = grad_out[r * d + c];
      acc_gamma += g * (x[r * d + c] - mean[r]) * rstd[r];
      acc_beta += g;
    }
    partial_gamma[item] = acc_gamma;
    partial_beta[item] = acc_beta;
  }
}

// One thread per column: the partials added in block order. dgamma[c] before dbeta[c], so the
// two may share one buffer (layer_norm(x, w, w)).
template <class T>
__global__ void layer_norm_affine_combine_kernel(const T* partial_gamma, const T* partial_beta, T* grad_gamma,
                                                 bool overwrite_gamma, T* grad_beta, bool overwrite_beta,
                                                 int64_t partials, int64_t d) {
  for (int64_t c = grid_index(); c < d; c += grid_stride()) {
    T sum_gamma = 0, sum_beta = 0;
    for (int64_t b = 0; b < partials; ++b) {
      sum_gamma += partial_gamma[b * d + c];
      sum_beta += partial_beta[b * d + c];
    }
    if (grad_gamma) write_grad(grad_gamma[c], sum_gamma, overwrite_gamma);
    if (grad_beta) write_grad(grad_beta[c], sum_beta, overwrite_beta);
  }
}

// ---- softmax / log_softmax -------------------------------------------------------------------
template <class T, bool Log>
__global__ void softmax_forward_kernel(const T* x, T* y, int64_t rows, int64_t d) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    const T lse = row_log_sum_exp(xr, d, scratch);
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) yr[c] = Log ? xr[c] - lse : exp_of(xr[c] - lse);
  }
}

// From the output y: softmax dx = y·(g − Σ g·y); log_softmax dx = g − exp(y)·Σ g.
template <class T, bool Log>
__global__ void softmax_backward_kernel(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d,
                                        bool overwrite) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * d;
    const T* gr = grad_out + r * d;
    T* dxr = grad_x + r * d;
    T partial = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) partial += Log ? gr[c] : gr[c] * yr[c];
    const T total = block_sum(partial, scratch);
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
      write_grad(dxr[c], Log ? gr[c] - exp_of(yr[c]) * total : yr[c] * (gr[c] - total), overwrite);
  }
}

// ---- l2_normalize and weight_norm ---------------------------------------------------------------
// ‖row‖₂ of d elements, to every thread of the block.
template <class T>
__device__ T row_l2_norm(const T* x, int64_t d, T* scratch) {
  T squares = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) squares += x[c] * x[c];
  return sqrt_of(block_sum(squares, scratch));
}

template <class T>
__global__ void l2_normalize_forward_kernel(const T* x, T* y, T* norm, int64_t rows, int64_t d, double eps) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T n = row_l2_norm(x + r * d, d, scratch);
    const T denom = max_of(n, static_cast<T>(eps));
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) y[r * d + c] = x[r * d + c] / denom;
    if (threadIdx.x == 0) norm[r] = n;
  }
}

// Where the norm is at least eps: dx = g/n − x·(x·g)/n³; below eps: dx = g/eps (PyTorch's
// clamp_min passes the gradient only where norm >= eps).
template <class T>
__global__ void l2_normalize_backward_kernel(const T* x, const T* norm, const T* grad_out, T* grad_x, int64_t rows,
                                             int64_t d, double eps, bool overwrite) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    const T* gr = grad_out + r * d;
    T* dxr = grad_x + r * d;
    const T n = norm[r];
    T partial = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) partial += xr[c] * gr[c];
    const T dot = block_sum(partial, scratch);  // outside the branch: every thread reaches the barriers
    if (static_cast<double>(n) >= eps) {
      const T scale = dot / n / n / n;  // divided step by step: n³ of a small f32 norm underflows
      for (int64_t c = threadIdx.x; c < d; c += blockDim.x) write_grad(dxr[c], gr[c] / n - xr[c] * scale, overwrite);
    } else {
      const T e = static_cast<T>(eps);
      for (int64_t c = threadIdx.x; c < d; c += blockDim.x) write_grad(dxr[c], gr[c] / e, overwrite);
    }
  }
}

template <class T>
__global__ void weight_norm_forward_kernel(const T* v, const T* g, T* w, T* norm, int64_t rows, int64_t d) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T n = row_l2_norm(v + r * d, d, scratch);
    const T scale = g[r] / n;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) w[r * d + c] = v[r * d + c] * scale;
    if (threadIdx.x == 0) norm[r] = n;
  }
}

// dg = (v·gw)/n and dv = (g/n)·(gw − v·(v·gw)/n²). The row's dv is complete (barrier) before
// dg[r] is written, so the two may share one buffer (v of shape [out, 1] passed as its own g).
template <class T>
__global__ void weight_norm_backward_kernel(const T* v, const T* g, const T* norm, const T* grad_w, T* grad_v,
                                            bool overwrite_v, T* grad_g, bool overwrite_g, int64_t rows, int64_t d) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* vr = v + r * d;
    const T* gwr = grad_w + r * d;
    const T n = norm[r];
    T partial = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) partial += vr[c] * gwr[c];
    const T dot = block_sum(partial, scratch);
    if (grad_v) {
      const T scale = g[r] / n, projection = dot / (n * n);
      for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
        write_grad(grad_v[r * d + c], scale * (gwr[c] - vr[c] * projection), overwrite_v);
    }
    __syncthreads();
    if (grad_g && threadIdx.x == 0) write_grad(grad_g[r], dot / n, overwrite_g);
  }
}

}  // namespace

template <class T>
void gelu_forward(const T* x, T* y, int64_t n) {
  if (n > 0)
    launch(gelu_forward_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), x, y, n);
}

template <class T>
void gelu_backward(const T* x, const T* grad_out, T* grad_in, int64_t n, bool overwrite) {
  if (n > 0)
    launch(gelu_backward_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), x, grad_out,
           grad_in, n, overwrite);
}

template <class T>
void layer_norm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int64_t rows, int64_t d,
                        double eps) {
  if (rows > 0)
    launch(layer_norm_forward_kernel<T>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), x, gamma, beta, y,
           mean, rstd, rows, d, eps);
}

template <class T>
void layer_norm_backward_input(const T* x, const T* gamma, const T* mean, const T* rstd, const T* grad_out, T* grad_x,
                               int64_t rows, int64_t d, bool overwrite) {
  if (rows > 0)
    launch(layer_norm_backward_input_kernel<T>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), x, gamma, mean,
           rstd, grad_out, grad_x, rows, d, overwrite);
}

int64_t layer_norm_affine_scratch_size(int64_t rows, int64_t d) { return 2 * affine_partials(rows) * d; }

template <class T>
void layer_norm_backward_affine(const T* x, const T* mean, const T* rstd, const T* grad_out, T* grad_gamma,
                                bool overwrite_gamma, T* grad_beta, bool overwrite_beta, T* scratch, int64_t rows,
                                int64_t d) {
  const int64_t partials = affine_partials(rows);
  if (partials * d == 0) return;
  T* partial_gamma = scratch;
  T* partial_beta = scratch + partials * d;
  launch(layer_norm_affine_partials_kernel<T>, elementwise_grid(partials * d), dim3(elementwise_block()), 0,
         engine_stream(), x, mean, rstd, grad_out, partial_gamma, partial_beta, partials, rows, d);
  launch(layer_norm_affine_combine_kernel<T>, elementwise_grid(d), dim3(elementwise_block()), 0, engine_stream(),
         static_cast<const T*>(partial_gamma), static_cast<const T*>(partial_beta), grad_gamma, overwrite_gamma,
         grad_beta, overwrite_beta, partials, d);
}

template <class T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t d) {
  if (rows > 0)
    launch(softmax_forward_kernel<T, false>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), x, y, rows, d);
}

template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t d) {
  if (rows > 0)
    launch(softmax_forward_kernel<T, true>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), x, y, rows, d);
}

template <class T>
void softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite) {
  if (rows > 0)
    launch(softmax_backward_kernel<T, false>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), y, grad_out,
           grad_x, rows, d, overwrite);
}

template <class T>
void log_softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite) {
  if (rows > 0)
    launch(softmax_backward_kernel<T, true>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), y, grad_out,
           grad_x, rows, d, overwrite);
}

template <class T>
void l2_normalize_forward(const T* x, T* y, T* norm, int64_t rows, int64_t d, double eps) {
  if (rows > 0)
    launch(l2_normalize_forward_kernel<T>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), x, y, norm, rows, d,
           eps);
}

template <class T>
void l2_normalize_backward(const T* x, const T* norm, const T* grad_out, T* grad_x, int64_t rows, int64_t d, double eps,
                           bool overwrite) {
  if (rows > 0)
    launch(l2_normalize_backward_kernel<T>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), x, norm, grad_out,
           grad_x, rows, d, eps, overwrite);
}

template <class T>
void weight_norm_forward(const T* v, const T* g, T* w, T* norm, int64_t rows, int64_t d) {
  if (rows > 0)
    launch(weight_norm_forward_kernel<T>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), v, g, w, norm, rows,
           d);
}

template <class T>
void weight_norm_backward(const T* v, const T* g, const T* norm, const T* grad_w, T* grad_v, bool overwrite_v,
                          T* grad_g, bool overwrite_g, int64_t rows, int64_t d) {
  if (rows > 0)
    launch(weight_norm_backward_kernel<T>, row_grid(rows), dim3(row_block(d)), 0, engine_stream(), v, g, norm, grad_w,
           grad_v, overwrite_v, grad_g, overwrite_g, rows, d);
}

#define MCDL_INSTANTIATE_NN(T)                                                                                         \
  template void gelu_forward<T>(const T*, T*, int64_t);                                                                \
  template void gelu_backward<T>(const T*, const T*, T*, int64_t, bool);                                               \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, double);             \
  template void layer_norm_backward_input<T>(const T*, const T*, const T*, const T*, const T*, T*, int64_t, int64_t,   \
                                             bool);                                                                    \
  template void layer_norm_backward_affine<T>(const T*, const T*, const T*, const T*, T*, bool, T*, bool, T*, int64_t, \
                                              int64_t);                                                                \
  template void softmax_forward<T>(const T*, T*, int64_t, int64_t);                                                    \
  template void log_softmax_forward<T>(const T*, T*, int64_t, int64_t);                                                \
  template void softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, bool);                                   \
  template void log_softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, bool);                               \
  template void l2_normalize_forward<T>(const T*, T*, T*, int64_t, int64_t, double);                                   \
  template void l2_normalize_backward<T>(const T*, const T*, const T*, T*, int64_t, int64_t, double, bool);            \
  template void weight_norm_forward<T>(const T*, const T*, T*, T*, int64_t, int64_t);                                  \
  template void weight_norm_backward<T>(const T*, const T*, const T*, const T*, T*, bool, T*, bool, int64_t, int64_t);
MCDL_INSTANTIATE_NN(float)
MCDL_INSTANTIATE_NN(double)

}  // namespace mcdl::cuda
