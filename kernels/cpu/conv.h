// The data movement of a patch convolution (kernel = stride = P, no padding): im2col into
// the GEMM layout and col2im back, plus the per-channel sums of the bias gradient. The
// products themselves run through gemm.h.
#pragma once
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "kernels/patch_grid.h"

namespace mcdl::cpu {

// cols [B, L, K]: row l = (i, j) of image b holds the patch x[b, :, iP:(i+1)P, jP:(j+1)P]
// flattened as (c, kh, kw), the order of a weight [O, C, P, P] flattened to [O, K].
template <class T>
void im2col_patches(const T* x, T* cols, const PatchGrid& g) {
  const int64_t p = g.patch, k = g.patch_size();
  parallel_rows(g.batch * g.rows(), g.cols() * k, [&](int64_t bi) {
    const int64_t b = bi / g.rows(), i = bi % g.rows();
    for (int64_t j = 0; j < g.cols(); ++j) {
      T* out = cols + (b * g.patches() + i * g.cols() + j) * k;
      for (int64_t c = 0; c < g.channels; ++c)
        for (int64_t kh = 0; kh < p; ++kh) {
          const T* from = x + ((b * g.channels + c) * g.height + i * p + kh) * g.width + j * p;
          for (int64_t kw = 0; kw < p; ++kw) *out++ = from[kw];
        }
    }
  });
}

// The inverse of im2col_patches: x (=|+=) the patches in cols. Patches do not overlap and
// cover x, so every element of x is written exactly once.
template <class T>
void col2im_patches(const T* cols, T* x, const PatchGrid& g, bool overwrite) {
  const int64_t p = g.patch, k = g.patch_size();
  parallel_rows(g.batch * g.rows(), g.cols() * k, [&](int64_t bi) {
    const int64_t b = bi / g.rows(), i = bi % g.rows();
    for (int64_t j = 0; j < g.cols(); ++j) {
      const T* in = cols + (b * g.patches() + i * g.cols() + j) * k;
      for (int64_t c = 0; c < g.channels; ++c)
        for (int64_t kh = 0; kh < p; ++kh) {
          T* to = x + ((b * g.channels + c) * g.height + i * p + kh) * g.width + j * p;
          for (int64_t kw = 0; kw < p; ++kw, ++in) to[kw] = overwrite ? *in : to[kw] + *in;
        }
    }
  });
}

// out [B, O, L] = bias[o] everywhere in channel o: the start value for the GEMM with beta = 1.
template <class T>
void fill_channels(const T* bias, T* out, int64_t batch, int64_t channels, int64_t spatial) {
  parallel_rows(batch * channels, spatial, [&](int64_t bo) {
    T* row = out + bo * spatial;
    for (int64_t l = 0; l < spatial; ++l) row[l] = bias[bo % channels];
  });
}

// out[o] (=|+=) Σ_b Σ_l grad[b, o, l], summed in double in a fixed order per channel.
template <class T>
void channel_sums(const T* grad, T* out, int64_t batch, int64_t channels, int64_t spatial, bool overwrite) {
  parallel_rows(channels, batch * spatial, [&](int64_t o) {
    double s = 0.0;
    for (int64_t b = 0; b < batch; ++b) {
      const T* row = grad + (b * channels + o) * spatial;
      for (int64_t l = 0; l < spatial; ++l) s += row[l];
    }
    out[o] = overwrite ? static_cast<T>(s) : static_cast<T>(out[o] + s);
  });
}

}  // namespace mcdl::cpu
