#include "kernels/cuda/nn.h"

#include <type_traits>

#include "kernels/cuda/device_math.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/map_bodies.h"
#include "kernels/cuda/row_kernels.h"

namespace mcdl::cuda {
namespace {

// ---- gelu: exact erf form (PyTorch nn.GELU, approximate='none') --------------------------------
// 1 + erf(x/√2) = 2Φ(x).
template <class T>
__device__ __forceinline__ T one_plus_erf(T v) {
  const T inv_sqrt2 = static_cast<T>(0.70710678118654752440);
  return T(1) + erf_of(v * inv_sqrt2);
}

// gelu(x) = x·Φ(x), d gelu/dx = Φ(x) + x·φ(x); a unary op of map_bodies.h.
struct Gelu {
  static constexpr bool uses_input = true, uses_output = false;
  template <class T>
  __device__ T forward(T v) const {
    return T(0.5) * v * one_plus_erf(v);
  }
  template <class T>
  __device__ T backward(T g, T v, T) const {
    const T inv_sqrt_2pi = static_cast<T>(0.39894228040143267794);
    return g * (T(0.5) * one_plus_erf(v) + v * inv_sqrt_2pi * exp_of(T(-0.5) * v * v));
  }
};

// ---- layer_norm ----------------------------------------------------------------------------------
// Rows up to warp_row_limit: a warp per row, the row in registers (read from memory once for
// the mean, the variance and the output; the block version read it three times and met at six
// barriers per row).
template <class T, int W, int E>
__global__ void layer_norm_forward_warp_kernel(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                                               int64_t rows, int64_t d, double eps) {
  using Row = RowRegs<T, W, E>;
  const int64_t packs = d / W;
  for_warp_rows_of<W, E>(x, rows, d, [&](int64_t r, Row& row) {
    const T mu = warp_all_sum(row.sum(packs, [](T v) { return v; })) / static_cast<T>(d);
    // Two passes (over registers): no cancellation for rows with a large mean.
    const T squares = warp_all_sum(row.sum(packs, [mu](T v) { return (v - mu) * (v - mu); }));
    const T rs = T(1) / sqrt_of(squares / static_cast<T>(d) + static_cast<T>(eps));
    MCDL_UNROLL
    for (int k = 0; k < Row::packs_per_lane; ++k) {
      if (!Row::valid(k, packs)) continue;
      const int64_t c = Row::offset(k);
      Pack<T, W> out = row.pack[k];
      const Pack<T, W> g = gamma ? load_pack<W>(gamma + c) : Pack<T, W>{};
      const Pack<T, W> b = beta ? load_pack<W>(beta + c) : Pack<T, W>{};
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) {
        T v = (out.v[j] - mu) * rs;
        if (gamma) v *= g.v[j];
        if (beta) v += b.v[j];
        out.v[j] = v;
      }
      store_pack<W>(y + r * d + c, out);
    }
    if (threadIdx.x % 32 == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  });
}

// dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) with ĝ = g·gamma and x̂ = (x − mean)·rstd; x and g
// stay in registers between the two row sums and the output.
template <class T, int W, int E>
__global__ void layer_norm_backward_input_warp_kernel(const T* x, const T* gamma, const T* mean, const T* rstd,
                                                      const T* grad_out, T* grad_x, int64_t rows, int64_t d,
                                                      bool overwrite) {
  using Row = RowRegs<T, W, E>;
  const int64_t packs = d / W;
  // gh: the output gradient, then ĝ in place.
  for_warp_rows_of<W, E>(x, grad_out, rows, d, [&](int64_t r, Row& xr, Row& gh) {
    const T mu = mean[r], rs = rstd[r];
    T sum_g = 0, sum_gx = 0;
    MCDL_UNROLL
    for (int k = 0; k < Row::packs_per_lane; ++k) {
      if (!Row::valid(k, packs)) continue;
      const Pack<T, W> g = gamma ? load_pack<W>(gamma + Row::offset(k)) : Pack<T, W>{};
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) {
        if (gamma) gh.pack[k].v[j] *= g.v[j];
        sum_g += gh.pack[k].v[j];
        sum_gx += gh.pack[k].v[j] * (xr.pack[k].v[j] - mu) * rs;
      }
    }
    const T mean_g = warp_all_sum(sum_g) / static_cast<T>(d);
    const T mean_gx = warp_all_sum(sum_gx) / static_cast<T>(d);
    Row::store_grad(grad_x + r * d, packs, overwrite, [&](int k, int j) {
      return rs * (gh.pack[k].v[j] - mean_g - (xr.pack[k].v[j] - mu) * rs * mean_gx);
    });
  });
}

// Longer rows: a block per row.
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

// Rows per partial sum of the affine backward, and partials per group of the combine. Constants
// (not the block size), so the summation order and thus the result is the same at every block
// size.
constexpr int64_t affine_rows_per_partial = 32;
constexpr int64_t affine_partials_per_group = 32;

int64_t affine_partials(int64_t rows) { return (rows + affine_rows_per_partial - 1) / affine_rows_per_partial; }
int64_t affine_groups(int64_t partials) {
  return (partials + affine_partials_per_group - 1) / affine_partials_per_group;
}

// One thread per (block of rows b, W columns from c): the column sums over the rows of block b,
// in row order, into partial_gamma/partial_beta[b·d + c ...]. Neighbouring threads read
// neighbouring columns in 16-byte packs (W > 1: x, grad_out aligned and d % W == 0), and the
// row loop is unrolled so that several rows' loads are in flight at once. Per column the
// arithmetic is that of W = 1.
template <class T, int W>
__global__ void layer_norm_affine_partials_kernel(const T* x, const T* mean, const T* rstd, const T* grad_out,
                                                  T* partial_gamma, T* partial_beta, int64_t partials, int64_t rows,
                                                  int64_t d) {
  const int64_t column_packs = d / W, items = partials * column_packs;
  for (int64_t item = grid_index(); item < items; item += grid_stride()) {
    const int64_t b = item / column_packs, c = item % column_packs * W;
    const int64_t first = b * affine_rows_per_partial;
    const int64_t end = first + affine_rows_per_partial < rows ? first + affine_rows_per_partial : rows;
    T acc_gamma[W] = {}, acc_beta[W] = {};
    MCDL_UNROLL_BY(8)
    for (int64_t r = first; r < end; ++r) {
      const Pack<T, W> g = load_pack<W>(grad_out + r * d + c), xv = load_pack<W>(x + r * d + c);
      const T mu = mean[r], rs = rstd[r];
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) {
        acc_gamma[j] += g.v[j] * (xv.v[j] - mu) * rs;
        acc_beta[j] += g.v[j];
      }
    }
    MCDL_UNROLL
    for (int j = 0; j < W; ++j) {
      partial_gamma[b * d + c + j] = acc_gamma[j];
      partial_beta[b * d + c + j] = acc_beta[j];
    }
  }
}

// One thread per (group s, column c): the sum of partials s·group .. s·group + group − 1 of
// column c in order, into out_gamma/out_beta[s·d + c]. With `group` = all partials and
// write_grads, out_gamma/out_beta are dgamma and dbeta (either may be null): the thread writes
// dgamma[c] and then dbeta[c] (so the two may share one buffer: layer_norm(x, w, w)). The sums
// thus go in two levels of at most 32 terms each instead of one sequential chain over every
// partial (a chain of dependent loads per column, which left the GPU idle on wide inputs).
template <class T>
__global__ void layer_norm_affine_combine_kernel(const T* partial_gamma, const T* partial_beta, T* out_gamma,
                                                 T* out_beta, int64_t partials, int64_t group, int64_t d,
                                                 bool write_grads, bool overwrite_gamma, bool overwrite_beta) {
  const int64_t groups = (partials + group - 1) / group;
  for (int64_t item = grid_index(); item < groups * d; item += grid_stride()) {
    const int64_t s = item / d, c = item % d;
    const int64_t end = (s + 1) * group < partials ? (s + 1) * group : partials;
    T sum_gamma = 0, sum_beta = 0;
    MCDL_UNROLL_BY(8)
    for (int64_t b = s * group; b < end; ++b) {
      sum_gamma += partial_gamma[b * d + c];
      sum_beta += partial_beta[b * d + c];
    }
    if (write_grads) {
      if (out_gamma) write_grad(out_gamma[c], sum_gamma, overwrite_gamma);
      if (out_beta) write_grad(out_beta[c], sum_beta, overwrite_beta);
    } else {
      out_gamma[item] = sum_gamma;
      out_beta[item] = sum_beta;
    }
  }
}

// ---- softmax / log_softmax -------------------------------------------------------------------
// Rows up to warp_row_limit: a warp per row in registers, so x is read once (the block version
// read it three times: max, sum, output) and each exp is computed once: softmax keeps
// e = exp(x − max) and scales it by 1/Σe (the block version took exp again of x − lse).
template <class T, bool Log, int W, int E>
__global__ void softmax_forward_warp_kernel(const T* x, T* y, int64_t rows, int64_t d) {
  using Row = RowRegs<T, W, E>;
  const int64_t packs = d / W;
  for_warp_rows_of<W, E>(x, rows, d, [&](int64_t r, Row& row) {
    const T top = warp_all_max(row.max(packs));
    T sum = 0;
    MCDL_UNROLL
    for (int k = 0; k < Row::packs_per_lane; ++k) {
      if (!Row::valid(k, packs)) continue;
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) {
        const T e = exp_of(row.pack[k].v[j] - top);
        sum += e;
        if constexpr (!Log) row.pack[k].v[j] = e;
      }
    }
    sum = warp_all_sum(sum);
    const T shift = Log ? top + log_of(sum) : T(0), scale = Log ? T(1) : T(1) / sum;
    MCDL_UNROLL
    for (int k = 0; k < Row::packs_per_lane; ++k) {
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) row.pack[k].v[j] = Log ? row.pack[k].v[j] - shift : row.pack[k].v[j] * scale;
    }
    row.store(y + r * d, packs);
  });
}

// From the output y: softmax dx = y·(g − Σ g·y); log_softmax dx = g − exp(y)·Σ g.
template <class T, bool Log, int W, int E>
__global__ void softmax_backward_warp_kernel(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d,
                                             bool overwrite) {
  using Row = RowRegs<T, W, E>;
  const int64_t packs = d / W;
  for_warp_rows_of<W, E>(y, grad_out, rows, d, [&](int64_t r, Row& yr, Row& gr) {
    T partial = 0;
    MCDL_UNROLL
    for (int k = 0; k < Row::packs_per_lane; ++k) {
      if (!Row::valid(k, packs)) continue;
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) partial += Log ? gr.pack[k].v[j] : gr.pack[k].v[j] * yr.pack[k].v[j];
    }
    const T total = warp_all_sum(partial);
    Row::store_grad(grad_x + r * d, packs, overwrite, [&](int k, int j) {
      const T g = gr.pack[k].v[j], yv = yr.pack[k].v[j];
      return Log ? g - exp_of(yv) * total : yv * (g - total);
    });
  });
}

// Longer rows: a block per row.
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
// l2_normalize rows up to warp_row_limit: a warp per row in registers (one read of x).
template <class T, int W, int E>
__global__ void l2_normalize_forward_warp_kernel(const T* x, T* y, T* norm, int64_t rows, int64_t d, double eps) {
  using Row = RowRegs<T, W, E>;
  const int64_t packs = d / W;
  for_warp_rows_of<W, E>(x, rows, d, [&](int64_t r, Row& row) {
    const T n = sqrt_of(warp_all_sum(row.sum(packs, [](T v) { return v * v; })));
    const T denom = max_of(n, static_cast<T>(eps));
    MCDL_UNROLL
    for (int k = 0; k < Row::packs_per_lane; ++k) {
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) row.pack[k].v[j] = row.pack[k].v[j] / denom;
    }
    row.store(y + r * d, packs);
    if (threadIdx.x % 32 == 0) norm[r] = n;
  });
}

// Where the norm is at least eps: dx = g/n − x·(x·g)/n³; below eps: dx = g/eps.
template <class T, int W, int E>
__global__ void l2_normalize_backward_warp_kernel(const T* x, const T* norm, const T* grad_out, T* grad_x,
                                                  int64_t rows, int64_t d, double eps, bool overwrite) {
  using Row = RowRegs<T, W, E>;
  const int64_t packs = d / W;
  for_warp_rows_of<W, E>(x, grad_out, rows, d, [&](int64_t r, Row& xr, Row& gr) {
    const T n = norm[r];
    T partial = 0;
    MCDL_UNROLL
    for (int k = 0; k < Row::packs_per_lane; ++k) {
      if (!Row::valid(k, packs)) continue;
      MCDL_UNROLL
      for (int j = 0; j < W; ++j) partial += xr.pack[k].v[j] * gr.pack[k].v[j];
    }
    const T dot = warp_all_sum(partial);
    const bool clamped = static_cast<double>(n) < eps;
    const T scale = dot / n / n / n;  // divided step by step: n³ of a small f32 norm underflows
    const T e = static_cast<T>(eps);
    Row::store_grad(grad_x + r * d, packs, overwrite, [&](int k, int j) {
      const T g = gr.pack[k].v[j];
      return clamped ? g / e : g / n - xr.pack[k].v[j] * scale;
    });
  });
}

// Longer rows (and weight_norm): a block per row.
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

// softmax (Log false) or log_softmax of rows of d, forward and backward.
template <class T, bool Log>
void launch_softmax_forward(const T* x, T* y, int64_t rows, int64_t d) {
  launch_rows<T, softmax_forward_kernel<T, Log>>(
      rows, d, packs_aligned(x, y),
      []<int W, int E>(RegsLayout<W, E>) { return KernelConstant<softmax_forward_warp_kernel<T, Log, W, E>>{}; },
      x, y, rows, d);
}

template <class T, bool Log>
void launch_softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite) {
  launch_rows<T, softmax_backward_kernel<T, Log>>(
      rows, d, packs_aligned(y, grad_out, grad_x),
      []<int W, int E>(RegsLayout<W, E>) { return KernelConstant<softmax_backward_warp_kernel<T, Log, W, E>>{}; },
      y, grad_out, grad_x, rows, d, overwrite);
}

}  // namespace

template <class T>
void gelu_forward(const T* x, T* y, int64_t n) {
  unary_map_forward(Gelu{}, x, y, n);
}

template <class T>
void gelu_backward(const T* x, const T* grad_out, T* grad_in, int64_t n, bool overwrite) {
  unary_map_backward<T>(Gelu{}, grad_out, x, nullptr, grad_in, n, overwrite);
}

template <class T>
void layer_norm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, int64_t rows, int64_t d,
                        double eps) {
  launch_rows<T, layer_norm_forward_kernel<T>>(
      rows, d, packs_aligned(x, gamma, beta, y),
      []<int W, int E>(RegsLayout<W, E>) { return KernelConstant<layer_norm_forward_warp_kernel<T, W, E>>{}; },
      x, gamma, beta, y, mean, rstd, rows, d, eps);
}

template <class T>
void layer_norm_backward_input(const T* x, const T* gamma, const T* mean, const T* rstd, const T* grad_out, T* grad_x,
                               int64_t rows, int64_t d, bool overwrite) {
  launch_rows<T, layer_norm_backward_input_kernel<T>>(
      rows, d, packs_aligned(x, gamma, grad_out, grad_x),
      []<int W, int E>(RegsLayout<W, E>) { return KernelConstant<layer_norm_backward_input_warp_kernel<T, W, E>>{}; },
      x, gamma, mean, rstd, grad_out, grad_x, rows, d, overwrite);
}

int64_t layer_norm_affine_scratch_size(int64_t rows, int64_t d) {
  const int64_t partials = affine_partials(rows);
  return 2 * (partials + affine_groups(partials)) * d;
}

template <class T>
void layer_norm_backward_affine(const T* x, const T* mean, const T* rstd, const T* grad_out, T* grad_gamma,
                                bool overwrite_gamma, T* grad_beta, bool overwrite_beta, T* scratch, int64_t rows,
                                int64_t d) {
  const int64_t partials = affine_partials(rows), groups = affine_groups(partials);
  if (partials * d == 0) return;
  T* partial_gamma = scratch;
  T* partial_beta = scratch + partials * d;
  T* group_gamma = partial_beta + partials * d;
  T* group_beta = group_gamma + groups * d;
  const unsigned block = elementwise_block();
  auto run_partials = [&](auto width) {
    constexpr int W = decltype(width)::value;
    constexpr auto kernel = layer_norm_affine_partials_kernel<T, W>;
    launch(kernel, balanced_grid(partials * (d / W), block, resident_blocks<kernel>(block)), dim3(block), 0,
           engine_stream(), x, mean, rstd, grad_out, partial_gamma, partial_beta, partials, rows, d);
  };
  if (d % pack_width<T> == 0 && packs_aligned(x, grad_out)) {
    run_partials(std::integral_constant<int, pack_width<T>>{});
  } else {
    run_partials(std::integral_constant<int, 1>{});
  }
  constexpr auto combine = layer_norm_affine_combine_kernel<T>;
  const T* sums_gamma = partial_gamma;
  const T* sums_beta = partial_beta;
  int64_t count = partials;
  if (groups > 1) {  // first level: sums of affine_partials_per_group partials
    launch(combine, balanced_grid(groups * d, block, resident_blocks<combine>(block)), dim3(block), 0, engine_stream(),
           sums_gamma, sums_beta, group_gamma, group_beta, partials, affine_partials_per_group, d, false, false, false);
    sums_gamma = group_gamma;
    sums_beta = group_beta;
    count = groups;
  }
  launch(combine, balanced_grid(d, block, resident_blocks<combine>(block)), dim3(block), 0, engine_stream(), sums_gamma,
         sums_beta, grad_gamma, grad_beta, count, count, d, true, overwrite_gamma, overwrite_beta);
}

template <class T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t d) {
  launch_softmax_forward<T, false>(x, y, rows, d);
}

template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t d) {
  launch_softmax_forward<T, true>(x, y, rows, d);
}

template <class T>
void softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite) {
  launch_softmax_backward<T, false>(y, grad_out, grad_x, rows, d, overwrite);
}

template <class T>
void log_softmax_backward(const T* y, const T* grad_out, T* grad_x, int64_t rows, int64_t d, bool overwrite) {
  launch_softmax_backward<T, true>(y, grad_out, grad_x, rows, d, overwrite);
}

template <class T>
void l2_normalize_forward(const T* x, T* y, T* norm, int64_t rows, int64_t d, double eps) {
  launch_rows<T, l2_normalize_forward_kernel<T>>(
      rows, d, packs_aligned(x, y),
      []<int W, int E>(RegsLayout<W, E>) { return KernelConstant<l2_normalize_forward_warp_kernel<T, W, E>>{}; },
      x, y, norm, rows, d, eps);
}

template <class T>
void l2_normalize_backward(const T* x, const T* norm, const T* grad_out, T* grad_x, int64_t rows, int64_t d, double eps,
                           bool overwrite) {
  launch_rows<T, l2_normalize_backward_kernel<T>>(
      rows, d, packs_aligned(x, grad_out, grad_x),
      []<int W, int E>(RegsLayout<W, E>) { return KernelConstant<l2_normalize_backward_warp_kernel<T, W, E>>{}; },
      x, norm, grad_out, grad_x, rows, d, eps, overwrite);
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
