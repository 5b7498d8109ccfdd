#include "engine/ops/linalg.h"

#include "engine/autograd.h"
#include "engine/dispatch.h"
#include "kernels/cpu/gemm.h"

namespace mcdl {
namespace {

struct MatmulDims {
  int64_t batch, m, k, n;
  bool shared_b;  // b is [K, N] for every batch entry
};

MatmulDims matmul_dims(const Tensor& a, const Tensor& b) {
  check_same_dtype_device("matmul", a, b);
  check_floating("matmul", a);
  check(a.dim() >= 2 && b.dim() >= 2, "matmul: both inputs need at least 2 dimensions, got ", a.str(), " and ",
        b.str());
  MatmulDims d{1, a.size(-2), a.size(-1), b.size(-1), b.dim() == 2};
  check(b.size(-2) == d.k, "matmul: inner dimensions differ: ", a.str(), " · ", b.str());
  if (!d.shared_b) {
    check(a.dim() == b.dim() && Shape(a.shape().begin(), a.shape().end() - 2) ==
                                    Shape(b.shape().begin(), b.shape().end() - 2),
          "matmul: batch dimensions differ: ", a.str(), " · ", b.str());
  }
  for (int64_t i = 0; i < a.dim() - 2; ++i) d.batch *= a.size(i);
  return d;
}

// Runs the batched product C_i = op(A_i)·op(B_i) with the given strides (0 = shared).
template <class T>
void batched_gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                  int64_t lda, int64_t stride_a, const T* b, int64_t ldb, int64_t stride_b, T* c, int64_t ldc,
                  int64_t stride_c, GradMode first_mode) {
  for (int64_t i = 0; i < batch; ++i) {
    // When C is shared across the batch (stride 0) the later products accumulate into it.
    const bool overwrite = first_mode == GradMode::Overwrite && (stride_c != 0 || i == 0);
    cpu::gemm(trans_a, trans_b, m, n, k, T(1), a + i * stride_a, lda, b + i * stride_b, ldb,
              overwrite ? T(0) : T(1), c + i * stride_c, ldc);
  }
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const MatmulDims d = matmul_dims(a, b);
  Shape out_shape(a.shape().begin(), a.shape().end() - 1);
  out_shape.push_back(d.n);
  Tensor out = empty(out_shape, a.dtype(), a.device());
  const int64_t stride_b = d.shared_b ? 0 : d.k * d.n;
  switch (a.device().type) {
    case DeviceType::cpu:
      dispatch_floating(a.dtype(), "matmul", [&](auto zero) {
        using T = decltype(zero);
        batched_gemm<T>(d.batch, false, false, d.m, d.n, d.k, a.data<T>(), d.k, d.m * d.k, b.data<T>(), d.n,
                        stride_b, out.data<T>(), d.n, d.m * d.n, GradMode::Overwrite);
      });
      break;
    case DeviceType::cuda: fail_no_cuda_kernel("matmul");
  }
  record(out, "matmul", {a, b}, [a, b, d, stride_b](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "matmul backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      if (sink.needed(0)) {  // dA = G·Bᵀ
        Tensor& da = sink.buffer(0, mode);
        batched_gemm<T>(d.batch, false, true, d.m, d.k, d.n, g.data<T>(), d.n, d.m * d.n, b.data<T>(), d.n,
                        stride_b, da.data<T>(), d.k, d.m * d.k, mode);
      }
      if (sink.needed(1)) {  // dB = Aᵀ·G, summed over the batch when B is shared
        Tensor& db = sink.buffer(1, mode);
        batched_gemm<T>(d.batch, true, false, d.k, d.n, d.m, a.data<T>(), d.k, d.m * d.k, g.data<T>(), d.n,
                        d.m * d.n, db.data<T>(), d.n, stride_b, mode);
      }
    });
  });
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_same_dtype_device("linear", x, weight);
  check_floating("linear", x);
  check(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input ", x.str(),
        " does not fit weight ", weight.str(), " (expected weight [out, ", x.dim() >= 1 ? x.size(-1) : 0, "])");
  const int64_t in = weight.size(1), out_features = weight.size(0), rows = x.numel() / in;
  if (bias.defined()) {
    check_same_dtype_device("linear", x, bias);
    check(bias.dim() == 1 && bias.size(0) == out_features, "linear: bias ", bias.str(), " does not fit weight ",
          weight.str());
  }
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  Tensor out = empty(out_shape, x.dtype(), x.device());
  switch (x.device().type) {
    case DeviceType::cpu:
      dispatch_floating(x.dtype(), "linear", [&](auto zero) {
        using T = decltype(zero);
        if (bias.defined()) cpu::broadcast_rows(bias.data<T>(), out.data<T>(), rows, out_features);
        cpu::gemm(false, true, rows, out_features, in, T(1), x.data<T>(), in, weight.data<T>(), in,
                  bias.defined() ? T(1) : T(0), out.data<T>(), out_features);
      });
      break;
    case DeviceType::cuda: fail_no_cuda_kernel("linear");
  }
  record(out, "linear", {x, weight, bias}, [x, weight, rows, in, out_features](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "linear backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      if (sink.needed(0)) {  // dX = G·W
        Tensor& dx = sink.buffer(0, mode);
        cpu::gemm(false, false, rows, in, out_features, T(1), g.data<T>(), out_features, weight.data<T>(), in,
                  mode == GradMode::Overwrite ? T(0) : T(1), dx.data<T>(), in);
      }
      if (sink.needed(1)) {  // dW = Gᵀ·X
        Tensor& dw = sink.buffer(1, mode);
        cpu::gemm(true, false, out_features, in, rows, T(1), g.data<T>(), out_features, x.data<T>(), in,
                  mode == GradMode::Overwrite ? T(0) : T(1), dw.data<T>(), in);
      }
      if (sink.needed(2)) {  // db = column sums of G
        Tensor& db = sink.buffer(2, mode);
        cpu::column_sums(g.data<T>(), db.data<T>(), rows, out_features, mode == GradMode::Overwrite);
      }
    });
  });
  return out;
}

}  // namespace mcdl
