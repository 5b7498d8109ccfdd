#include "engine/ops/linalg.h"

#include "engine/dispatch.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/gemm_dispatch.h"
#include "kernels/cpu/gemm_bf16.h"  // bf16_products_native

namespace mcdl {
namespace {

struct MatmulDims {
  int64_t batch, m, k, n;
  bool shared_b;  // b is [K, N] for every batch entry
};

// b is [..., K, N], or [..., N, K] when b_transposed.
MatmulDims matmul_dims(const Tensor& a, const Tensor& b, bool b_transposed) {
  check_same_dtype_device("matmul", a, b);
  check_floating("matmul", a);
  check(a.dim() >= 2 && b.dim() >= 2, "matmul: both inputs need at least 2 dimensions, got ", a, " and ", b);
  MatmulDims d{1, a.size(-2), a.size(-1), b.size(b_transposed ? -2 : -1), b.dim() == 2};
  check(b.size(b_transposed ? -1 : -2) == d.k, "matmul: inner dimensions differ: ", a, " · ", b,
        b_transposed ? " (transposed)" : "");
  if (!d.shared_b) {
    check(a.dim() == b.dim() && Shape(a.shape().begin(), a.shape().end() - 2) ==
                                    Shape(b.shape().begin(), b.shape().end() - 2),
          "matmul: batch dimensions differ: ", a, " · ", b);
  }
  for (int64_t i = 0; i < a.dim() - 2; ++i) d.batch *= a.size(i);
  return d;
}

// C = scale·A·op(B) with op(B) = B or Bᵀ; the backward reads B the same way: dA = scale·G·op(B)ᵀ,
// and dB = scale·Aᵀ·G (or its transpose scale·Gᵀ·A when B is stored transposed).
Tensor matmul_impl(const Tensor& a, const Tensor& b, bool b_transposed, double scale) {
  const MatmulDims d = matmul_dims(a, b, b_transposed);
  Shape out_shape(a.shape().begin(), a.shape().end() - 1);
  out_shape.push_back(d.n);
  Tensor out = empty(out_shape, a.dtype(), a.device());
  // A shared B turns the batch into one product of the stacked rows: [batch·M, K] · [K, N].
  const int64_t rows = d.shared_b ? d.batch * d.m : d.m, batch = d.shared_b ? 1 : d.batch;
  const int64_t ldb = b_transposed ? d.k : d.n;
  // On CUDA, matmul stays on cublasGemmStridedBatchedEx, not cuBLASLt: with no bias there is no
  // epilogue to fuse, cuBLAS's GEMM already runs cuBLASLt's kernels under its own heuristic, and
  // PyTorch's matmul takes the same cublasGemm*Ex path. linear's measured gap to PyTorch (0.396
  // vs 0.257 ms, TF32, H200) was the bias pass (232 MB written, then read back at beta = 1),
  // which matmul does not have; not measured for matmul itself.
  dispatch_floating(a.dtype(), "matmul", [&](auto zero) {
    using T = decltype(zero);
    batched_gemm<T>(a.device(), batch, false, b_transposed, rows, d.n, d.k, a.ptr<T>(), d.k, rows * d.k, b.ptr<T>(),
                    ldb, d.k * d.n, out.ptr<T>(), d.n, rows * d.n, GradMode::Overwrite, static_cast<T>(scale));
  });
  record(out, "matmul", {a, b}, [a, b, d, rows, batch, b_transposed, ldb, scale](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "matmul backward", [&](auto zero) {
      using T = decltype(zero);
      const T alpha = static_cast<T>(scale);
      GradMode mode;
      if (sink.needed(0)) {  // dA = scale·G·op(B)ᵀ
        Tensor& da = sink.buffer(0, mode);
        batched_gemm<T>(g.device(), batch, false, !b_transposed, rows, d.k, d.n, g.ptr<T>(), d.n, rows * d.n,
                        b.ptr<T>(), ldb, d.k * d.n, da.ptr<T>(), d.k, rows * d.k, mode, alpha);
      }
      if (sink.needed(1)) {  // dB = scale·Aᵀ·G, or scale·Gᵀ·A stored transposed (a shared B sums over the stacked rows)
        Tensor& db = sink.buffer(1, mode);
        if (b_transposed) {
          batched_gemm<T>(g.device(), batch, true, false, d.n, d.k, rows, g.ptr<T>(), d.n, rows * d.n, a.ptr<T>(),
                          d.k, rows * d.k, db.ptr<T>(), d.k, d.k * d.n, mode, alpha);
        } else {
          batched_gemm<T>(g.device(), batch, true, false, d.k, d.n, rows, a.ptr<T>(), d.k, rows * d.k, g.ptr<T>(),
                          d.n, rows * d.n, db.ptr<T>(), d.n, d.k * d.n, mode, alpha);
        }
      }
    });
  });
  return out;
}

}  // namespace

const char* matmul_precision_name(MatmulPrecision value) {
  switch (value) {
    case MatmulPrecision::fp32: return "fp32";
    case MatmulPrecision::tf32: return "tf32";
    case MatmulPrecision::bf16: return "bf16";
  }
  return "?";
}

MatmulPrecision parse_matmul_precision(const std::string& text) {
  for (MatmulPrecision value : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16}) {
    if (text == matmul_precision_name(value)) return value;
  }
  fail("--precision: expected auto, fp32, tf32 or bf16, got '", text, "'");
}

MatmulPrecision select_matmul_precision(const std::string& text, Device device) {
  if (text == "auto") return select_matmul_precision(device.is_cuda() ? "bf16" : "fp32", device);
  const MatmulPrecision value = parse_matmul_precision(text);
  if (!device.is_cuda()) {
    check(value != MatmulPrecision::tf32, "--precision tf32: needs a CUDA device (TF32 is a tensor-core format); ",
          "on the CPU run with --precision fp32, or bf16 where the processor has AVX512-BF16");
    check(value != MatmulPrecision::bf16 || cpu::bf16_products_native(),
          "--precision bf16: this processor has no AVX512-BF16 (oneDNN would emulate bf16 products, slower than ",
          "fp32); run with --precision fp32, or on a CUDA device");
  }
  return value;
}

Tensor matmul(const Tensor& a, const Tensor& b) { return matmul_impl(a, b, false, 1.0); }
Tensor matmul_transposed(const Tensor& a, const Tensor& b, double scale) { return matmul_impl(a, b, true, scale); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual) {
  if (residual.defined() && !bias.defined()) return residual + linear(x, weight);  // no epilogue to ride in
  check_same_dtype_device("linear", x, weight);
  check_floating("linear", x);
  check(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input ", x,
        " does not fit weight ", weight, " (expected weight [out, ", x.dim() >= 1 ? x.size(-1) : 0, "])");
  const int64_t in = weight.size(1), out_features = weight.size(0), rows = x.numel() / in;
  if (bias.defined()) {
    check_same_dtype_device("linear", x, bias);
    check(bias.dim() == 1 && bias.size(0) == out_features, "linear: bias ", bias, " does not fit weight ", weight);
  }
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  if (residual.defined()) {
    check_same_dtype_device("linear", x, residual);
    check(residual.shape() == out_shape, "linear: residual ", residual, " does not match the output ",
          shape_str(out_shape));
  }
  Tensor out = empty(out_shape, x.dtype(), x.device());
  const Device device = x.device();
  dispatch_floating(x.dtype(), "linear", [&](auto zero) {
    using T = decltype(zero);
    if (!bias.defined()) {
      single_gemm<T>(device, false, true, rows, out_features, in, x.ptr<T>(), in, weight.ptr<T>(), in, out.ptr<T>(),
                     out_features, GradMode::Overwrite);
      return;
    }
    // On CUDA, cuBLASLt adds the bias in the GEMM's epilogue: the output is written once, never
    // read (for 768->2304 at 128·197 rows, 232 MB not written by a broadcast nor read back).
    on_device(device, [&](auto k) {
      k.gemm_bias(false, true, rows, out_features, in, x.ptr<T>(), in, weight.ptr<T>(), in, bias.ptr<T>(),
                  residual.defined() ? residual.ptr<T>() : nullptr, out.ptr<T>(), gemm_mode());
    });
  });
  record(out, "linear", {x, weight, bias, residual}, [x, weight, rows, in, out_features](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "linear backward", [&](auto zero) {
      using T = decltype(zero);
      const Device device = g.device();
      GradMode mode;
      if (sink.needed(0)) {  // dX = G·W
        Tensor& dx = sink.buffer(0, mode);
        single_gemm<T>(device, false, false, rows, in, out_features, g.ptr<T>(), out_features, weight.ptr<T>(), in,
                       dx.ptr<T>(), in, mode);
      }
      if (sink.needed(1)) {  // dW = Gᵀ·X
        Tensor& dw = sink.buffer(1, mode);
        single_gemm<T>(device, true, false, out_features, in, rows, g.ptr<T>(), out_features, x.ptr<T>(), in,
                       dw.ptr<T>(), in, mode);
      }
      if (sink.needed(2)) {  // db = column sums of G
        Tensor& db = sink.buffer(2, mode);
        const bool overwrite = mode == GradMode::Overwrite;
        on_device(device, [&](auto k) { k.column_sums(g.ptr<T>(), db.ptr<T>(), rows, out_features, overwrite); });
      }
      if (sink.needed(3)) sink.add(3, g);  // d(residual) = G
    });
  });
  return out;
}

}  // namespace mcdl
