// The non-GEMM parts of the linear layer and the patch convolution on the device: bias
// broadcasts and the deterministic bias-gradient sums. Twins of kernels/cpu/gemm.h and
// kernels/cpu/conv.h.
#pragma once
#include <cstdint>

#include "kernels/patch_grid.h"

namespace mcdl::cuda {

// out[r, :] = bias for every row.
template <class T>
void broadcast_rows(const T* bias, T* out, int64_t rows, int64_t cols);
// out [B, O, L] = bias[o] everywhere in channel o.
template <class T>
void fill_channels(const T* bias, T* out, int64_t batch, int64_t channels, int64_t spatial);
// out[c] (=|+=) Σ_r in[r, c].
template <class T>
void column_sums(const T* in, T* out, int64_t rows, int64_t cols, bool overwrite);
// out[o] (=|+=) Σ_b Σ_l grad[b, o, l].
template <class T>
void channel_sums(const T* grad, T* out, int64_t batch, int64_t channels, int64_t spatial, bool overwrite);

// cols [B, L, K] from x [B, C, H, W] (patch l = (i, j) flattened as (c, kh, kw)), and back:
// x (=|+=) cols, every element of x written once.
template <class T>
void im2col_patches(const T* x, T* cols, const PatchGrid& grid);
template <class T>
void col2im_patches(const T* cols, T* x, const PatchGrid& grid, bool overwrite);

}  // namespace mcdl::cuda
