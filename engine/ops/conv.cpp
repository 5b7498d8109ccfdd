#include "engine/ops/conv.h"

#include "engine/autograd.h"
#include "engine/dispatch.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"

namespace mcdl {
namespace {

cpu::PatchGrid patch_grid(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_same_dtype_device("conv2d_patch", x, weight);
  check_floating("conv2d_patch", x);
  check(x.dim() == 4, "conv2d_patch: x must be [B, C, H, W], got ", x.str());
  check(weight.dim() == 4 && weight.size(2) == weight.size(3) && weight.size(2) > 0,
        "conv2d_patch: weight must be [O, C, P, P] with P > 0, got ", weight.str());
  check(weight.size(1) == x.size(1), "conv2d_patch: weight ", weight.str(), " expects ", weight.size(1),
        " input channels but x is ", x.str());
  check(x.numel() > 0 && weight.numel() > 0, "conv2d_patch: empty input ", x.str(), " or weight ", weight.str());
  const int64_t p = weight.size(2);
  check(x.size(2) % p == 0 && x.size(3) % p == 0, "conv2d_patch: height and width of x ", x.str(),
        " must be divisible by the patch size ", p);
  if (bias.defined()) {
    check_same_dtype_device("conv2d_patch", x, bias);
    check(bias.dim() == 1 && bias.size(0) == weight.size(0), "conv2d_patch: bias ", bias.str(), " does not fit weight ",
          weight.str());
  }
  return {x.size(0), x.size(1), x.size(2), x.size(3), p};
}

}  // namespace

Tensor conv2d_patch(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const cpu::PatchGrid grid = patch_grid(x, weight, bias);
  const int64_t batch = grid.batch, out_channels = weight.size(0), l = grid.patches(), k = grid.patch_size();
  Tensor out = empty({batch, out_channels, grid.rows(), grid.cols()}, x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::cpu:
      dispatch_floating(x.dtype(), "conv2d_patch", [&](auto zero) {
        using T = decltype(zero);
        Tensor cols = empty({batch, l, k}, x.dtype(), x.device());
        cpu::im2col_patches(x.data<T>(), cols.data<T>(), grid);
        if (bias.defined()) cpu::fill_channels(bias.data<T>(), out.data<T>(), batch, out_channels, l);
        for (int64_t b = 0; b < batch; ++b) {  // out_b [O, L] = W [O, K] · cols_bᵀ (+ bias)
          cpu::gemm(false, true, out_channels, l, k, T(1), weight.data<T>(), k, cols.data<T>() + b * l * k, k,
                    bias.defined() ? T(1) : T(0), out.data<T>() + b * out_channels * l, l);
        }
      });
      break;
    case DeviceType::cuda:
      fail_no_cuda_kernel("conv2d_patch");
  }
  record(out, "conv2d_patch", {x, weight, bias}, [x, weight, grid, out_channels](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "conv2d_patch", [&](auto zero) {
      using T = decltype(zero);
      const int64_t batch = grid.batch, l = grid.patches(), k = grid.patch_size();
      const T* grad = g.data<T>();
      GradMode mode;
      if (sink.needed(1)) {  // dW [O, K] = Σ_b G_b [O, L] · cols_b [L, K]
        Tensor cols = empty({batch, l, k}, x.dtype(), x.device());
        cpu::im2col_patches(x.data<T>(), cols.data<T>(), grid);
        Tensor& dw = sink.buffer(1, mode);
        for (int64_t b = 0; b < batch; ++b) {
          const bool overwrite = mode == GradMode::Overwrite && b == 0;
          cpu::gemm(false, false, out_channels, k, l, T(1), grad + b * out_channels * l, l, cols.data<T>() + b * l * k,
                    k, overwrite ? T(0) : T(1), dw.data<T>(), k);
        }
      }
      if (sink.needed(2)) {  // db[o] = Σ_b Σ_l G[b, o, l]
        Tensor& db = sink.buffer(2, mode);
        cpu::channel_sums(grad, db.data<T>(), batch, out_channels, l, mode == GradMode::Overwrite);
      }
      if (sink.needed(0)) {  // dcols_b [L, K] = G_bᵀ · W, then back to image layout
        Tensor dcols = empty({batch, l, k}, x.dtype(), x.device());
        for (int64_t b = 0; b < batch; ++b) {
          cpu::gemm(true, false, l, k, out_channels, T(1), grad + b * out_channels * l, l, weight.data<T>(), k, T(0),
                    dcols.data<T>() + b * l * k, k);
        }
        Tensor& dx = sink.buffer(0, mode);
        cpu::col2im_patches(dcols.data<T>(), dx.data<T>(), grid, mode == GradMode::Overwrite);
      }
    });
  });
  return out;
}

}  // namespace mcdl
