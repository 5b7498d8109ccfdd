#include "engine/ops/conv.h"

#include "engine/dispatch.h"
#include "engine/ops/gemm_dispatch.h"

namespace mcdl {
namespace {

PatchGrid patch_grid(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_same_dtype_device("conv2d_patch", x, weight);
  check_floating("conv2d_patch", x);
  check(x.dim() == 4, "conv2d_patch: x must be [B, C, H, W], got ", x);
  check(weight.dim() == 4 && weight.size(2) == weight.size(3) && weight.size(2) > 0,
        "conv2d_patch: weight must be [O, C, P, P] with P > 0, got ", weight);
  check(weight.size(1) == x.size(1), "conv2d_patch: weight ", weight, " expects ", weight.size(1),
        " input channels but x is ", x);
  check(x.numel() > 0 && weight.numel() > 0, "conv2d_patch: empty input ", x, " or weight ", weight);
  const int64_t p = weight.size(2);
  check(x.size(2) % p == 0 && x.size(3) % p == 0, "conv2d_patch: height and width of x ", x,
        " must be divisible by the patch size ", p);
  if (bias.defined()) {
    check_same_dtype_device("conv2d_patch", x, bias);
    check(bias.dim() == 1 && bias.size(0) == weight.size(0), "conv2d_patch: bias ", bias, " does not fit weight ",
          weight);
  }
  return {x.size(0), x.size(1), x.size(2), x.size(3), p};
}

}  // namespace

Tensor conv2d_patch(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const PatchGrid grid = patch_grid(x, weight, bias);
  const int64_t batch = grid.batch, out_channels = weight.size(0), l = grid.patches(), k = grid.patch_size();
  const Device device = x.device();
  Tensor out = empty({batch, out_channels, grid.rows(), grid.cols()}, x.dtype(), device);
  dispatch_floating(x.dtype(), "conv2d_patch", [&](auto zero) {
    using T = decltype(zero);
    Tensor cols = empty({batch, l, k}, x.dtype(), device);
    on_device(device, [&](auto kernels) {
      kernels.im2col_patches(x.ptr<T>(), cols.ptr<T>(), grid);
      if (bias.defined()) kernels.fill_channels(bias.ptr<T>(), out.ptr<T>(), batch, out_channels, l);
    });
    // out_b [O, L] = W [O, K] · cols_bᵀ (+ bias), W shared by the batch.
    batched_gemm<T>(device, batch, false, true, out_channels, l, k, weight.ptr<T>(), k, 0, cols.ptr<T>(), k, l * k,
                    out.ptr<T>(), l, out_channels * l, bias.defined() ? GradMode::Accumulate : GradMode::Overwrite);
  });
  record(out, "conv2d_patch", {x, weight, bias}, [x, weight, grid, out_channels](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "conv2d_patch", [&](auto zero) {
      using T = decltype(zero);
      const Device device = g.device();
      const int64_t batch = grid.batch, l = grid.patches(), k = grid.patch_size();
      const T* grad = g.ptr<T>();
      GradMode mode;
      if (sink.needed(1)) {  // dW [O, K] = Σ_b G_b [O, L] · cols_b [L, K]
        Tensor cols = empty({batch, l, k}, x.dtype(), device);
        on_device(device, [&](auto kernels) { kernels.im2col_patches(x.ptr<T>(), cols.ptr<T>(), grid); });
        Tensor& dw = sink.buffer(1, mode);
        for (int64_t b = 0; b < batch; ++b) {
          single_gemm<T>(device, false, false, out_channels, k, l, grad + b * out_channels * l, l,
                         cols.ptr<T>() + b * l * k, k, dw.ptr<T>(), k, b == 0 ? mode : GradMode::Accumulate);
        }
      }
      if (sink.needed(2)) {  // db[o] = Σ_b Σ_l G[b, o, l]
        Tensor& db = sink.buffer(2, mode);
        const bool overwrite = mode == GradMode::Overwrite;
        on_device(device, [&](auto kernels) {
          kernels.channel_sums(grad, db.ptr<T>(), batch, out_channels, l, overwrite);
        });
      }
      if (sink.needed(0)) {  // dcols_b [L, K] = G_bᵀ · W, then back to image layout
        Tensor dcols = empty({batch, l, k}, x.dtype(), device);
        batched_gemm<T>(device, batch, true, false, l, k, out_channels, grad, l, out_channels * l, weight.ptr<T>(), k,
                        0, dcols.ptr<T>(), k, l * k, GradMode::Overwrite);
        Tensor& dx = sink.buffer(0, mode);
        const bool overwrite = mode == GradMode::Overwrite;
        on_device(device, [&](auto kernels) { kernels.col2im_patches(dcols.ptr<T>(), dx.ptr<T>(), grid, overwrite); });
      }
    });
  });
  return out;
}

}  // namespace mcdl
