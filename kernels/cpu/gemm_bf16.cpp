#include "kernels/cpu/gemm_bf16.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/bf16_lanes.h"
#include "kernels/cpu/gelu_float.h"
#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {
namespace {

using dnnl::memory;
using Dims = memory::dims;

std::atomic<int64_t> reference_products{0};

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A row-major matrix op(X) of rows×cols stored with leading dimension ld (transposed: stored
// cols×rows), batch entries `stride` apart (a batch of 1 when the entries share it).
memory::desc matrix_desc(memory::data_type type, int64_t batch, int64_t stride, bool transposed, int64_t rows,
                         int64_t cols, int64_t ld) {
  // A single (or shared) entry still gets its natural batch stride: with 0, oneDNN reads the batch
  // dimension as the innermost one and falls back to its reference kernel.
  const int64_t entries = stride == 0 ? 1 : batch, step = entries == 1 ? (transposed ? cols : rows) * ld : stride;
  const Dims strides = transposed ? Dims{step, 1, ld} : Dims{step, ld, 1};
  return memory::desc(Dims{entries, rows, cols}, type, strides);
}

// Runs src·weights (+ bias) into dst with `attr`; the buffers are the callers', not copied.
void run_matmul(const memory::desc& src, const void* a, const memory::desc& weights, const void* b,
                const memory::desc& bias, const void* bias_data, const memory::desc& dst, void* c,
                const dnnl::primitive_attr& attr) {
  const dnnl::engine& engine = cpu_engine();
  thread_local dnnl::stream stream(engine);
  try {
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, bias, dst), attr, engine);
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) reference_products.fetch_add(1, std::memory_order_relaxed);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(src, engine, const_cast<void*>(a))},
                                         {DNNL_ARG_WEIGHTS, memory(weights, engine, const_cast<void*>(b))},
                                         {DNNL_ARG_DST, memory(dst, engine, c)}};
    if (bias_data) args.emplace(DNNL_ARG_BIAS, memory(bias, engine, const_cast<void*>(bias_data)));
    dnnl::matmul(pd).execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    const std::string why = bf16_products_available()
                                ? ""
                                : ": this processor has no AVX-512, which oneDNN's bf16 products need; compute in fp32 "
                                  "(--precision fp32) here";
    throw std::runtime_error(std::string("bf16 product through oneDNN failed: ") + e.what() + " (status " +
                             std::to_string(static_cast<int>(e.status)) + ")" + why);
  }
}

}  // namespace

bool bf16_products_available() {
  static const bool available = [] {
    const memory::desc one(Dims{1, 1, 1}, memory::data_type::bf16, Dims{1, 1, 1});
    const memory::desc out(Dims{1, 1, 1}, memory::data_type::f32, Dims{1, 1, 1});
    try {
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(one, one, out), cpu_engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

bool bf16_products_native() {
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16_isa = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16_isa) == bf16_isa;  // the ISA values nest as bit sets (AMX includes it)
  }();
  return native;
}

int64_t bf16_reference_products() { return reference_products.load(std::memory_order_relaxed); }

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a, int64_t lda,
               int64_t stride_a, const bf16* b, int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
               int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) {  // nothing to multiply: C = beta·C
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < n; ++j) {
          float& value = c[i * stride_c + r * ldc + j];
          value = beta == 0.0f ? 0.0f : beta * value;
        }
    return;
  }
  if (stride_a == 0 && batch > 1) {  // A shared by every entry, which oneDNN does not broadcast
    for (int64_t i = 0; i < batch; ++i)
      gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b + i * stride_b, ldb, 0, beta, c + i * stride_c, ldc, 0,
                1);
    return;
  }
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops sum;
    sum.append_sum(beta);  // dst = alpha·A·B + beta·dst
    attr.set_post_ops(sum);
  }
  run_matmul(matrix_desc(memory::data_type::bf16, batch, stride_a, trans_a, m, k, lda), a,
             matrix_desc(memory::data_type::bf16, batch, stride_b, trans_b, k, n, ldb), b, memory::desc(), nullptr,
             matrix_desc(memory::data_type::f32, batch, stride_c, false, m, n, ldc), c, attr);
}

namespace {
// The stored matrices of a batch (one when shared), each rows×cols with leading dimension ld,
// rounded to bf16 into one contiguous block.
std::vector<bf16> rounded_bf16(const float* x, int64_t batch, int64_t stride, int64_t rows, int64_t cols,
                               int64_t ld) {
  const int64_t entries = stride == 0 ? 1 : batch;
  std::vector<bf16> out(static_cast<size_t>(entries * rows * cols));
  parallel_rows(entries * rows, cols, [&](int64_t er) {
    round_to_bf16(x + (er / rows) * stride + (er % rows) * ld, out.data() + er * cols, cols);
  });
  return out;
}
}  // namespace

void gemm_f32_as_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                      int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta,
                      float* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k, b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  const std::vector<bf16> a16 = rounded_bf16(a, batch, stride_a, a_rows, a_cols, lda);
  const std::vector<bf16> b16 = rounded_bf16(b, batch, stride_b, b_rows, b_cols, ldb);
  gemm_bf16(trans_a, trans_b, m, n, k, alpha, a16.data(), a_cols, stride_a == 0 ? 0 : a_rows * a_cols, b16.data(),
            b_cols, stride_b == 0 ? 0 : b_rows * b_cols, beta, c, ldc, stride_c, batch);
}

namespace {

// y = act(x·wᵀ + bias (+ residual)), act the identity or a GELU (`gelu` set: in the form `form`),
// all in fp32 inside oneDNN's matmul (its post-ops run on the accumulators), rounded to bf16 once.
void linear_bf16_then(bool gelu, GeluForm form, int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w,
                      const bf16* bias, const bf16* residual, bf16* y) {
  if (rows == 0 || out == 0) return;
  if (in == 0) {
    std::vector<float> row(static_cast<size_t>(out));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < out; ++c)
        row[c] = static_cast<float>(bias[c]) + (residual ? static_cast<float>(residual[r * out + c]) : 0.0f);
      if (gelu && form == GeluForm::erf) gelu_float(row.data(), row.data(), out);
      if (gelu && form == GeluForm::tanh)
        for (float& value : row) value = gelu_tanh(value);
      for (int64_t c = 0; c < out; ++c) y[r * out + c] = bf16(row[c]);
    }
    return;
  }
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  if (residual) {
    // The residual is the sum post-op's start value in y: read in fp32, added before the one rounding.
    if (residual != y) std::memcpy(static_cast<void*>(y), residual, static_cast<size_t>(rows * out) * sizeof(bf16));
    ops.append_sum(1.0f);
  }
  if (gelu)
    ops.append_eltwise(1.0f,
                       form == GeluForm::erf ? dnnl::algorithm::eltwise_gelu_erf : dnnl::algorithm::eltwise_gelu_tanh,
                       0.0f, 0.0f);
  if (residual || gelu) attr.set_post_ops(ops);
  const memory::data_type type = memory::data_type::bf16;
  run_matmul(matrix_desc(type, 1, 0, false, rows, in, in), x, matrix_desc(type, 1, 0, true, in, out, in), w,
             memory::desc(Dims{1, 1, out}, type, Dims{out, out, 1}), bias, matrix_desc(type, 1, 0, false, rows, out, out),
             y, attr);
}

}  // namespace

void linear_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                 const bf16* residual, bf16* y) {
  linear_bf16_then(false, GeluForm::erf, rows, in, out, x, w, bias, residual, y);
}

void linear_gelu_bf16(int64_t rows, int64_t in, int64_t out, const bf16* x, const bf16* w, const bf16* bias,
                      bf16* y, GeluForm form) {
  linear_bf16_then(true, form, rows, in, out, x, w, bias, nullptr, y);
}

}  // namespace mcdl::cpu
