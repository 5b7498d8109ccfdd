#include "engine/ops/nn.h"

#include <algorithm>
#include <utility>

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"

namespace mcdl {
namespace {

// A float input of rank >= 1 seen as rows × (last dimension).
struct Rows {
  int64_t rows, d;
};

Rows last_dim_rows(const char* op, const Tensor& x) {
  check_floating(op, x);
  check(x.dim() >= 1, op, ": expected a tensor with at least 1 dimension, got ", x);
  const int64_t d = x.size(-1);
  return {d == 0 ? 0 : x.numel() / d, d};
}

// Per-row statistics saved for a backward: one value per row, same dtype as x.
Tensor row_stats(const Tensor& x, int64_t rows) { return empty({rows}, x.dtype(), x.device()); }

// The data of an optional input (gamma, beta) on its device, or null when it is undefined.
template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.ptr<T>() : nullptr;
}

// The gradient buffer of input i and its mode, or null when that input needs no gradient.
template <class T>
T* grad_or_null(GradSink& sink, size_t input, GradMode& mode) {
  return sink.needed(input) ? sink.buffer(input, mode).ptr<T>() : nullptr;
}

}  // namespace

Tensor gelu(const Tensor& x) {
  check_floating("gelu", x);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  dispatch_floating(x.dtype(), "gelu", [&](auto zero) {
    using T = decltype(zero);
    on_device(x.device(), [&](auto k) { k.gelu_forward(x.ptr<T>(), out.ptr<T>(), x.numel()); });
  });
  record(out, "gelu", {x}, [x](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "gelu backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      const bool overwrite = mode == GradMode::Overwrite;
      on_device(x.device(), [&](auto k) {
        k.gelu_backward(x.ptr<T>(), g.ptr<T>(), dx.ptr<T>(), x.numel(), overwrite);
      });
    });
  });
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  const Rows s = last_dim_rows("layer_norm", x);
  check(s.d > 0, "layer_norm: the last dimension of input ", x, " is empty");
  check(eps >= 0, "layer_norm: eps must be >= 0, got ", eps);
  for (const auto& [param, name] : {std::pair{gamma, "gamma"}, std::pair{beta, "beta"}}) {
    if (!param.defined()) continue;
    check_same_dtype_device("layer_norm", x, param);
    check(param.shape() == Shape{s.d}, "layer_norm: ", name, " ", param,
          " does not match the last dimension of input ", x, " (expected [", s.d, "])");
  }
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  Tensor mean = row_stats(x, s.rows), rstd = row_stats(x, s.rows);
  dispatch_floating(x.dtype(), "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    on_device(x.device(), [&](auto k) {
      k.layer_norm_forward(x.ptr<T>(), ptr_or_null<T>(gamma), ptr_or_null<T>(beta), out.ptr<T>(), mean.ptr<T>(),
                           rstd.ptr<T>(), s.rows, s.d, eps);
    });
  });
  record(out, "layer_norm", {x, gamma, beta}, [x, gamma, mean, rstd, s](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "layer_norm backward", [&](auto zero) {
      using T = decltype(zero);
      on_device(x.device(), [&](auto k) {
        GradMode mode;
        if (sink.needed(0)) {
          Tensor& dx = sink.buffer(0, mode);
          k.layer_norm_backward_input(x.ptr<T>(), ptr_or_null<T>(gamma), mean.ptr<T>(), rstd.ptr<T>(), g.ptr<T>(),
                                      dx.ptr<T>(), s.rows, s.d, mode == GradMode::Overwrite);
        }
        if (sink.needed(1) || sink.needed(2)) {
          GradMode gamma_mode = GradMode::Overwrite, beta_mode = GradMode::Overwrite;
          T* dgamma = grad_or_null<T>(sink, 1, gamma_mode);
          T* dbeta = grad_or_null<T>(sink, 2, beta_mode);
          Tensor scratch = empty({k.layer_norm_affine_scratch_size(s.rows, s.d)}, x.dtype(), x.device());
          k.layer_norm_backward_affine(x.ptr<T>(), mean.ptr<T>(), rstd.ptr<T>(), g.ptr<T>(), dgamma,
                                       gamma_mode == GradMode::Overwrite, dbeta, beta_mode == GradMode::Overwrite,
                                       scratch.ptr<T>(), s.rows, s.d);
        }
      });
    });
  });
  return out;
}

namespace {

// softmax and log_softmax differ only in their kernels; both backwards read the output.
// `forward` / `backward` take the kernels of the device first (engine/backend.h).
template <class Forward, class Backward>
Tensor softmax_like(const char* op, const char* backward_op, const Tensor& x, Forward forward, Backward backward) {
  const Rows s = last_dim_rows(op, x);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  dispatch_floating(x.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    on_device(x.device(), [&](auto k) { forward(k, x.ptr<T>(), out.ptr<T>(), s.rows, s.d); });
  });
  // The rule keeps the output: through detach(), so the node does not own its own output.
  record(out, op, {x}, [y = out.detach(), s, backward, backward_op](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), backward_op, [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      on_device(y.device(), [&](auto k) {
        backward(k, y.ptr<T>(), g.ptr<T>(), dx.ptr<T>(), s.rows, s.d, mode == GradMode::Overwrite);
      });
    });
  });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x) {
  return softmax_like(
      "softmax", "softmax backward", x,
      [](auto k, auto... a) { k.softmax_forward(a...); }, [](auto k, auto... a) { k.softmax_backward(a...); });
}

Tensor log_softmax(const Tensor& x) {
  return softmax_like(
      "log_softmax", "log_softmax backward", x,
      [](auto k, auto... a) { k.log_softmax_forward(a...); }, [](auto k, auto... a) { k.log_softmax_backward(a...); });
}

Tensor l2_normalize(const Tensor& x, double eps) {
  const Rows s = last_dim_rows("l2_normalize", x);
  check(eps > 0, "l2_normalize: eps must be > 0, got ", eps);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  Tensor norm = row_stats(x, s.rows);
  dispatch_floating(x.dtype(), "l2_normalize", [&](auto zero) {
    using T = decltype(zero);
    on_device(x.device(), [&](auto k) {
      k.l2_normalize_forward(x.ptr<T>(), out.ptr<T>(), norm.ptr<T>(), s.rows, s.d, eps);
    });
  });
  record(out, "l2_normalize", {x}, [x, norm, s, eps](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "l2_normalize backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& dx = sink.buffer(0, mode);
      const bool overwrite = mode == GradMode::Overwrite;
      on_device(x.device(), [&](auto k) {
        k.l2_normalize_backward(x.ptr<T>(), norm.ptr<T>(), g.ptr<T>(), dx.ptr<T>(), s.rows, s.d, eps, overwrite);
      });
    });
  });
  return out;
}

Tensor weight_norm(const Tensor& v, const Tensor& g) {
  check_floating("weight_norm", v);
  check_same_dtype_device("weight_norm", v, g);
  check(v.dim() >= 2, "weight_norm: v must have at least 2 dimensions [out, in, ...], got ", v);
  const int64_t rows = v.size(0), d = v.numel() / std::max<int64_t>(rows, 1);
  Shape keep_dims(static_cast<size_t>(v.dim()), 1);  // PyTorch's weight_g shape [out, 1, ..., 1]
  keep_dims[0] = rows;
  if (g.shape() != Shape{rows} && g.shape() != keep_dims)
    fail("weight_norm: g ", g, " does not fit v ", v, " (expected [", rows, "] or ", shape_str(keep_dims), ")");
  Tensor out = empty(v.shape(), v.dtype(), v.device());
  Tensor norm = row_stats(v, rows);
  dispatch_floating(v.dtype(), "weight_norm", [&](auto zero) {
    using T = decltype(zero);
    on_device(v.device(), [&](auto k) {
      k.weight_norm_forward(v.ptr<T>(), g.ptr<T>(), out.ptr<T>(), norm.ptr<T>(), rows, d);
    });
  });
  record(out, "weight_norm", {v, g}, [v, g, norm, rows, d](const Tensor& gw, GradSink& sink) {
    dispatch_floating(gw.dtype(), "weight_norm backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode v_mode = GradMode::Overwrite, g_mode = GradMode::Overwrite;
      T* dv = grad_or_null<T>(sink, 0, v_mode);
      T* dg = grad_or_null<T>(sink, 1, g_mode);
      const bool overwrite_v = v_mode == GradMode::Overwrite, overwrite_g = g_mode == GradMode::Overwrite;
      on_device(v.device(), [&](auto k) {
        k.weight_norm_backward(v.ptr<T>(), g.ptr<T>(), norm.ptr<T>(), gw.ptr<T>(), dv, overwrite_v, dg, overwrite_g,
                               rows, d);
      });
    });
  });
  return out;
}

}  // namespace mcdl
