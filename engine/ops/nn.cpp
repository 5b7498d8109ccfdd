#include "engine/ops/nn.h"

#include <algorithm>
#include <utility>

#include "engine/autograd.h"
#include "engine/dispatch.h"
#include "kernels/cpu/nn.h"

namespace mcdl {
namespace {

// A float input of rank >= 1 seen as rows × (last dimension).
struct Rows {
  int64_t rows, d;
};

Rows last_dim_rows(const char* op, const Tensor& x) {
  check_floating(op, x);
  check(x.dim() >= 1, op, ": expected a tensor with at least 1 dimension, got ", x.str());
  const int64_t d = x.size(-1);
  return {d == 0 ? 0 : x.numel() / d, d};
}

// Per-row statistics saved for a backward: one value per row, same dtype as x.
Tensor row_stats(const Tensor& x, int64_t rows) { return empty({rows}, x.dtype(), x.device()); }

// The data of an optional input (gamma, beta), or null when it is undefined.
template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// The gradient buffer of input i and its mode, or null when that input needs no gradient.
template <class T>
T* grad_or_null(GradSink& sink, size_t input, GradMode& mode) {
  return sink.needed(input) ? sink.buffer(input, mode).data<T>() : nullptr;
}

}  // namespace

Tensor gelu(const Tensor& x) {
  check_floating("gelu", x);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::cpu:
      dispatch_floating(x.dtype(), "gelu", [&](auto zero) {
        using T = decltype(zero);
        cpu::gelu_forward(x.data<T>(), out.data<T>(), x.numel());
      });
      break;
    case DeviceType::cuda: fail_no_cuda_kernel("gelu");
  }
  record(out, "gelu", {x}, [x](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "gelu backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      cpu::gelu_backward(x.data<T>(), g.data<T>(), dx.data<T>(), x.numel(), mode == GradMode::Overwrite);
    });
  });
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  const Rows s = last_dim_rows("layer_norm", x);
  check(s.d > 0, "layer_norm: the last dimension of input ", x.str(), " is empty");
  check(eps >= 0, "layer_norm: eps must be >= 0, got ", eps);
  for (const auto& [param, name] : {std::pair{gamma, "gamma"}, std::pair{beta, "beta"}}) {
    if (!param.defined()) continue;
    check_same_dtype_device("layer_norm", x, param);
    check(param.shape() == Shape{s.d}, "layer_norm: ", name, " ", param.str(),
          " does not match the last dimension of input ", x.str(), " (expected [", s.d, "])");
  }
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  Tensor mean = row_stats(x, s.rows), rstd = row_stats(x, s.rows);
  switch (x.device().type) {
    case DeviceType::cpu:
      dispatch_floating(x.dtype(), "layer_norm", [&](auto zero) {
        using T = decltype(zero);
        cpu::layer_norm_forward(x.data<T>(), data_or_null<T>(gamma), data_or_null<T>(beta), out.data<T>(),
                                mean.data<T>(), rstd.data<T>(), s.rows, s.d, eps);
      });
      break;
    case DeviceType::cuda: fail_no_cuda_kernel("layer_norm");
  }
  record(out, "layer_norm", {x, gamma, beta}, [x, gamma, mean, rstd, s](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "layer_norm backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      if (sink.needed(0)) {
        Tensor& dx = sink.buffer(0, mode);
        cpu::layer_norm_backward_input(x.data<T>(), data_or_null<T>(gamma), mean.data<T>(), rstd.data<T>(),
                                       g.data<T>(), dx.data<T>(), s.rows, s.d, mode == GradMode::Overwrite);
      }
      if (sink.needed(1) || sink.needed(2)) {
        GradMode gamma_mode = GradMode::Overwrite, beta_mode = GradMode::Overwrite;
        T* dgamma = grad_or_null<T>(sink, 1, gamma_mode);
        T* dbeta = grad_or_null<T>(sink, 2, beta_mode);
        cpu::layer_norm_backward_affine(x.data<T>(), mean.data<T>(), rstd.data<T>(), g.data<T>(), dgamma,
                                        gamma_mode == GradMode::Overwrite, dbeta,
                                        beta_mode == GradMode::Overwrite, s.rows, s.d);
      }
    });
  });
  return out;
}

namespace {

// softmax and log_softmax differ only in their kernels; both backwards read the output.
template <class Forward, class Backward>
Tensor softmax_like(const char* op, const char* backward_op, const Tensor& x, Forward forward, Backward backward) {
  const Rows s = last_dim_rows(op, x);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::cpu:
      dispatch_floating(x.dtype(), op, [&](auto zero) {
        using T = decltype(zero);
        forward(x.data<T>(), out.data<T>(), s.rows, s.d);
      });
      break;
    case DeviceType::cuda: fail_no_cuda_kernel(op);
  }
  // The rule keeps the output: through detach(), so the node does not own its own output.
  record(out, op, {x}, [y = out.detach(), s, backward, backward_op](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), backward_op, [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      backward(y.data<T>(), g.data<T>(), dx.data<T>(), s.rows, s.d, mode == GradMode::Overwrite);
    });
  });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x) {
  return softmax_like(
      "softmax", "softmax backward", x, [](auto... a) { cpu::softmax_forward(a...); },
      [](auto... a) { cpu::softmax_backward(a...); });
}

Tensor log_softmax(const Tensor& x) {
  return softmax_like(
      "log_softmax", "log_softmax backward", x, [](auto... a) { cpu::log_softmax_forward(a...); },
      [](auto... a) { cpu::log_softmax_backward(a...); });
}

Tensor l2_normalize(const Tensor& x, double eps) {
  const Rows s = last_dim_rows("l2_normalize", x);
  check(eps > 0, "l2_normalize: eps must be > 0, got ", eps);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  Tensor norm = row_stats(x, s.rows);
  switch (x.device().type) {
    case DeviceType::cpu:
      dispatch_floating(x.dtype(), "l2_normalize", [&](auto zero) {
        using T = decltype(zero);
        cpu::l2_normalize_forward(x.data<T>(), out.data<T>(), norm.data<T>(), s.rows, s.d, eps);
      });
      break;
    case DeviceType::cuda: fail_no_cuda_kernel("l2_normalize");
  }
  record(out, "l2_normalize", {x}, [x, norm, s, eps](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "l2_normalize backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      cpu::l2_normalize_backward(x.data<T>(), norm.data<T>(), g.data<T>(), dx.data<T>(), s.rows, s.d, eps,
                                 mode == GradMode::Overwrite);
    });
  });
  return out;
}

Tensor weight_norm(const Tensor& v, const Tensor& g) {
  check_floating("weight_norm", v);
  check_same_dtype_device("weight_norm", v, g);
  check(v.dim() >= 2, "weight_norm: v must have at least 2 dimensions [out, in, ...], got ", v.str());
  const int64_t rows = v.size(0), d = v.numel() / std::max<int64_t>(rows, 1);
  Shape keep_dims(static_cast<size_t>(v.dim()), 1);  // PyTorch's weight_g shape [out, 1, ..., 1]
  keep_dims[0] = rows;
  check(g.shape() == Shape{rows} || g.shape() == keep_dims, "weight_norm: g ", g.str(), " does not fit v ",
        v.str(), " (expected [", rows, "] or ", shape_str(keep_dims), ")");
  Tensor out = empty(v.shape(), v.dtype(), v.device());
  Tensor norm = row_stats(v, rows);
  switch (v.device().type) {
    case DeviceType::cpu:
      dispatch_floating(v.dtype(), "weight_norm", [&](auto zero) {
        using T = decltype(zero);
        cpu::weight_norm_forward(v.data<T>(), g.data<T>(), out.data<T>(), norm.data<T>(), rows, d);
      });
      break;
    case DeviceType::cuda: fail_no_cuda_kernel("weight_norm");
  }
  record(out, "weight_norm", {v, g}, [v, g, norm, rows, d](const Tensor& gw, GradSink& sink) {
    dispatch_floating(gw.dtype(), "weight_norm backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode v_mode = GradMode::Overwrite, g_mode = GradMode::Overwrite;
      T* dv = grad_or_null<T>(sink, 0, v_mode);
      T* dg = grad_or_null<T>(sink, 1, g_mode);
      cpu::weight_norm_backward(v.data<T>(), g.data<T>(), norm.data<T>(), gw.data<T>(), dv,
                                v_mode == GradMode::Overwrite, dg, g_mode == GradMode::Overwrite, rows, d);
    });
  });
  return out;
}

}  // namespace mcdl
