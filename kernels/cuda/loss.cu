#include "kernels/cuda/loss.h"

#include "kernels/cuda/device_math.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/row_kernels.h"

namespace mcdl::cuda {
namespace {

// One block: loss[0] = Σ terms / divisor, each thread adding a strided slice, then the block's
// fixed-order tree.
template <class T>
__global__ void mean_kernel(const T* terms, int64_t n, T* loss, int64_t divisor) {
  __shared__ T scratch[32];
  T partial = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) partial += terms[i];
  const T total = block_sum(partial, scratch);
  if (threadIdx.x == 0) loss[0] = total / static_cast<T>(divisor);
}

template <class T>
void launch_mean(const T* terms, int64_t n, T* loss, int64_t divisor) {
  launch(mean_kernel<T>, dim3(1), dim3(block_size(256)), 0, engine_stream(), terms, n, loss, divisor);
}

// ---- cross_entropy with class indices -----------------------------------------------------------
// Classes up to warp_row_limit: a warp per row, the row in registers (one read of the logits;
// all loads of a row in flight at once; shuffles instead of block barriers).
template <class T, class Index, int W, int E>
__global__ void cross_entropy_forward_warp_kernel(const T* logits, const Index* targets, T* lse, T* row_terms,
                                                  int64_t rows, int64_t classes) {
  const int64_t packs = classes / W;
  using Row = RowRegs<T, W, E>;
  for_warp_rows_of<W, E>(logits, rows, classes, [&](int64_t r, Row& row) {
    const T row_lse = warp_row_log_sum_exp(row, packs);
    if (threadIdx.x % 32 == 0) {
      lse[r] = row_lse;
      row_terms[r] = row_lse - logits[r * classes + static_cast<int64_t>(targets[r])];
    }
  });
}

// More classes: a block per row.
template <class T, class Index>
__global__ void cross_entropy_forward_kernel(const T* logits, const Index* targets, T* lse, T* row_terms, int64_t rows,
                                             int64_t classes) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T row_lse = row_log_sum_exp(logits + r * classes, classes, scratch);
    if (threadIdx.x == 0) {
      lse[r] = row_lse;
      row_terms[r] = row_lse - logits[r * classes + static_cast<int64_t>(targets[r])];
    }
  }
}

// dlogits = scale·(softmax − onehot), a warp per row in 16-byte packs where the rows allow (the
// element-wise version divided every flat index by `classes` to find its row).
template <class T, class Index, int W, int E>
__global__ void cross_entropy_backward_warp_kernel(const T* logits, const Index* targets, const T* lse,
                                                   const T* grad_loss, T* grad_logits, int64_t rows, int64_t classes,
                                                   bool overwrite) {
  using Row = RowRegs<T, W, E>;
  const T scale = grad_loss[0] / static_cast<T>(rows);
  const int64_t packs = classes / W;
  for_warp_rows_of<W, E>(logits, rows, classes, [&](int64_t r, Row& row) {
    const T row_lse = lse[r];
    const int64_t target = static_cast<int64_t>(targets[r]);
    Row::store_grad(grad_logits + r * classes, packs, overwrite, [&](int k, int j) {
      const T p = exp_of(row.pack[k].v[j] - row_lse);
      return scale * (p - (Row::offset(k) + j == target ? T(1) : T(0)));
    });
  });
}

template <class T, class Index>
__global__ void cross_entropy_backward_kernel(const T* logits, const Index* targets, const T* lse, const T* grad_loss,
                                              T* grad_logits, int64_t rows, int64_t classes, bool overwrite) {
  const T scale = grad_loss[0] / static_cast<T>(rows);
  for (int64_t i = grid_index(); i < rows * classes; i += grid_stride()) {
    const int64_t r = i / classes, c = i % classes;
    const T p = exp_of(logits[i] - lse[r]);
    write_grad(grad_logits[i], scale * (p - (c == static_cast<int64_t>(targets[r]) ? T(1) : T(0))), overwrite);
  }
}

// ---- cross_entropy with probability targets: Σ_c p_nc·(lse_n − logits_nc) per row ------------------
template <class T>
__global__ void cross_entropy_soft_forward_kernel(const T* logits, const T* probs, T* lse, T* row_terms, int64_t rows,
                                                  int64_t classes) {
  __shared__ T scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* lr = logits + r * classes;
    const T* pr = probs + r * classes;
    const T row_lse = row_log_sum_exp(lr, classes, scratch);
    T partial = 0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) partial += pr[c] * (row_lse - lr[c]);
    const T term = block_sum(partial, scratch);
    if (threadIdx.x == 0) {
      lse[r] = row_lse;
      row_terms[r] = term;
    }
  }
}

// dlogits = scale·(softmax·Σ_c p − p), dprobs = scale·(lse − logits). Per element dlogits is
// written before dprobs by the same thread (cross_entropy_soft(x, x) shares one buffer).
template <class T>
__global__ void cross_entropy_soft_backward_kernel(const T* logits, const T* probs, const T* lse, const T* grad_loss,
                                                   T* grad_logits, bool overwrite_logits, T* grad_probs,
                                                   bool overwrite_probs, int64_t rows, int64_t classes) {
  __shared__ T scratch[32];
  const T scale = grad_loss[0] / static_cast<T>(rows);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* lr = logits + r * classes;
    const T* pr = probs + r * classes;
    const T row_lse = lse[r];
    T partial = 0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) partial += pr[c];
    const T prob_sum = block_sum(partial, scratch);
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const T log_p = lr[c] - row_lse;
      if (grad_logits)
        write_grad(grad_logits[r * classes + c], scale * (exp_of(log_p) * prob_sum - pr[c]), overwrite_logits);
      if (grad_probs) write_grad(grad_probs[r * classes + c], -scale * log_p, overwrite_probs);
    }
  }
}

// ---- mse_loss ----------------------------------------------------------------------------------
// Partial sums of (a − b)²: block b adds the elements b·blockDim + t + k·gridDim·blockDim.
template <class T>
__global__ void mse_partials_kernel(const T* a, const T* b, T* partials, int64_t n) {
  __shared__ T scratch[32];
  T partial = 0;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const T diff = a[i] - b[i];
    partial += diff * diff;
  }
  const T total = block_sum(partial, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <class T>
__global__ void mse_backward_kernel(const T* a, const T* b, const T* grad_loss, T* grad_a, bool overwrite_a, T* grad_b,
                                    bool overwrite_b, int64_t n) {
  const T scale = grad_loss[0] / static_cast<T>(n);
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const T d = T(2) * scale * (a[i] - b[i]);
    if (grad_a) write_grad(grad_a[i], d, overwrite_a);
    if (grad_b) write_grad(grad_b[i], -d, overwrite_b);
  }
}

}  // namespace

template <class T, class Index>
void cross_entropy_forward(const T* logits, const Index* targets, T* lse, T* row_terms, T* loss, int64_t rows,
                           int64_t classes) {
  launch_rows<T, cross_entropy_forward_kernel<T, Index>>(
      rows, classes, packs_aligned(logits),
      []<int W, int E>(RegsLayout<W, E>) {
        return KernelConstant<cross_entropy_forward_warp_kernel<T, Index, W, E>>{};
      },
      logits, targets, lse, row_terms, rows, classes);
  launch_mean(static_cast<const T*>(row_terms), rows, loss, rows);
}

template <class T, class Index>
void cross_entropy_backward(const T* logits, const Index* targets, const T* lse, const T* grad_loss, T* grad_logits,
                            int64_t rows, int64_t classes, bool overwrite) {
  if (classes <= warp_row_limit) {
    launch_warp_rows<T>(
        rows, classes, packs_aligned(logits, grad_logits),
        []<int W, int E>(RegsLayout<W, E>) {
          return KernelConstant<cross_entropy_backward_warp_kernel<T, Index, W, E>>{};
        },
        logits, targets, lse, grad_loss, grad_logits, rows, classes, overwrite);
    return;
  }
  launch(cross_entropy_backward_kernel<T, Index>, elementwise_grid(rows * classes), dim3(elementwise_block()), 0,
         engine_stream(), logits, targets, lse, grad_loss, grad_logits, rows, classes, overwrite);
}

template <class T>
void cross_entropy_soft_forward(const T* logits, const T* probs, T* lse, T* row_terms, T* loss, int64_t rows,
                                int64_t classes) {
  launch(cross_entropy_soft_forward_kernel<T>, row_grid(rows), dim3(row_block(classes)), 0, engine_stream(), logits,
         probs, lse, row_terms, rows, classes);
  launch_mean(static_cast<const T*>(row_terms), rows, loss, rows);
}

template <class T>
void cross_entropy_soft_backward(const T* logits, const T* probs, const T* lse, const T* grad_loss, T* grad_logits,
                                 bool overwrite_logits, T* grad_probs, bool overwrite_probs, int64_t rows,
                                 int64_t classes) {
  launch(cross_entropy_soft_backward_kernel<T>, row_grid(rows), dim3(row_block(classes)), 0, engine_stream(), logits,
         probs, lse, grad_loss, grad_logits, overwrite_logits, grad_probs, overwrite_probs, rows, classes);
}

// About 4096 elements per partial sum, at most 1024 partials (the number depends on n only).
int64_t mse_scratch_size(int64_t n) { return std::clamp<int64_t>((n + 4095) / 4096, 1, 1024); }

template <class T>
void mse_forward(const T* a, const T* b, T* scratch, T* loss, int64_t n) {
  const int64_t partials = mse_scratch_size(n);
  launch(mse_partials_kernel<T>, dim3(static_cast<unsigned>(partials)), dim3(block_size(256)), 0, engine_stream(), a, b,
         scratch, n);
  launch_mean(static_cast<const T*>(scratch), partials, loss, n);
}

template <class T>
void mse_backward(const T* a, const T* b, const T* grad_loss, T* grad_a, bool overwrite_a, T* grad_b, bool overwrite_b,
                  int64_t n) {
  launch(mse_backward_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), a, b, grad_loss,
         grad_a, overwrite_a, grad_b, overwrite_b, n);
}

#define MCDL_INSTANTIATE_CROSS_ENTROPY(T, Index)                                                                   \
  template void cross_entropy_forward<T, Index>(const T*, const Index*, T*, T*, T*, int64_t, int64_t);             \
  template void cross_entropy_backward<T, Index>(const T*, const Index*, const T*, const T*, T*, int64_t, int64_t, \
                                                 bool);
#define MCDL_INSTANTIATE_LOSS(T)                                                                                    \
  MCDL_INSTANTIATE_CROSS_ENTROPY(T, int32_t)                                                                        \
  MCDL_INSTANTIATE_CROSS_ENTROPY(T, int64_t)                                                                        \
  template void cross_entropy_soft_forward<T>(const T*, const T*, T*, T*, T*, int64_t, int64_t);                    \
  template void cross_entropy_soft_backward<T>(const T*, const T*, const T*, const T*, T*, bool, T*, bool, int64_t, \
                                               int64_t);                                                            \
  template void mse_forward<T>(const T*, const T*, T*, T*, int64_t);                                                \
  template void mse_backward<T>(const T*, const T*, const T*, T*, bool, T*, bool, int64_t);
MCDL_INSTANTIATE_LOSS(float)
MCDL_INSTANTIATE_LOSS(double)

}  // namespace mcdl::cuda
