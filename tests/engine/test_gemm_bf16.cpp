// The host's bf16 products through oneDNN (kernels/cpu/gemm_bf16.h) against OpenBLAS's sgemm on the
// same bf16 values: every transpose, padded leading dimensions, strided and shared batch entries,
// alpha and beta, an empty inner dimension; the linear layer's bias and residual with one
// rounding; results independent of the thread count; and the CPU's --precision gate.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/ops/elementwise.h"
#include "engine/ops/linalg.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"
#include "tests/bf16_support.h"

using namespace mcdl;

namespace {

// n values uniform in [-1, 1], already bf16 (so the float copy is exactly what oneDNN multiplies).
std::vector<float> bf16_valued(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(bf16(uniform(rng)));
  return v;
}

std::vector<bf16> as_bf16(const std::vector<float>& v) {
  std::vector<bf16> out;
  for (float x : v) out.push_back(bf16(x));
  return out;
}

// fp32 accumulation of the same products in another order: a few ulps of the magnitudes summed.
void check_near(const std::vector<float>& expected, const std::vector<float>& got, double tolerance) {
  REQUIRE(expected.size() == got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(expected[i] - got[i]) <= tolerance);
  }
}

struct Layout {
  bool trans_a, trans_b;
  int64_t stride_a_entries, stride_b_entries;  // 0: shared by the batch
};

void check_gemm(const Layout& l, float alpha, float beta, int64_t k) {
  const int64_t m = 5, n = 7, batch = 3;
  const int64_t lda = (l.trans_a ? m : k) + 2, ldb = (l.trans_b ? k : n) + 1, ldc = n + 3;
  const int64_t a_size = (l.trans_a ? k : m) * lda, b_size = (l.trans_b ? n : k) * ldb, c_size = m * ldc;
  const int64_t stride_a = l.stride_a_entries * a_size, stride_b = l.stride_b_entries * b_size;
  const std::vector<float> a = bf16_valued(static_cast<size_t>(batch * a_size), 1);
  const std::vector<float> b = bf16_valued(static_cast<size_t>(batch * b_size), 2);
  const std::vector<float> c = bf16_valued(static_cast<size_t>(batch * c_size), 3);
  std::vector<float> expected = c, got = c, got_rounded = c;
  for (int64_t i = 0; i < batch; ++i)
    cpu::gemm(l.trans_a, l.trans_b, m, n, k, alpha, a.data() + i * stride_a, lda, b.data() + i * stride_b, ldb, beta,
              expected.data() + i * c_size, ldc);
  const std::vector<bf16> a16 = as_bf16(a), b16 = as_bf16(b);
  cpu::gemm_bf16(l.trans_a, l.trans_b, m, n, k, alpha, a16.data(), lda, stride_a, b16.data(), ldb, stride_b, beta,
                 got.data(), ldc, c_size, batch);
  check_near(expected, got, 1e-5);
  // The f32 entry point rounds its operands itself (here already bf16-valued: the same result).
  cpu::gemm(l.trans_a, l.trans_b, m, n, k, alpha, a.data(), lda, stride_a, b.data(), ldb, stride_b, beta,
            got_rounded.data(), ldc, c_size, batch, GemmMode::bf16);
  check_near(expected, got_rounded, 1e-5);
}

}  // namespace

TEST_CASE("cpu bf16 gemm: transposes, padded leading dimensions, batches, alpha and beta") {
  if (!testing::cpu_runs_bf16_products()) return;
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true})
      for (Layout l : {Layout{trans_a, trans_b, 1, 1}, Layout{trans_a, trans_b, 1, 0}, Layout{trans_a, trans_b, 0, 1}}) {
        CAPTURE(trans_a);
        CAPTURE(trans_b);
        CAPTURE(l.stride_a_entries);
        CAPTURE(l.stride_b_entries);
        check_gemm(l, 1.0f, 0.0f, 9);
        check_gemm(l, 0.5f, 1.0f, 9);
        check_gemm(l, 1.0f, 0.25f, 64);
        check_gemm(l, 2.0f, 0.5f, 0);  // C = beta·C
      }
  // Every layout above ran on oneDNN's fast kernels where the processor has them.
  if (cpu::bf16_products_native()) CHECK(cpu::bf16_reference_products() == 0);
}

TEST_CASE("cpu bf16 gemm: f32 operands are rounded to bf16 once, ties to even") {
  if (!testing::cpu_runs_bf16_products()) return;
  // 1 + 2^-8 lies halfway between two bf16 values and rounds to 1; 1 + 3·2^-8 rounds up to 1 + 2^-6.
  const std::vector<float> a = {1.0f + 0x1p-8f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f}, b = {1.0f, 1.0f, 1.0f};
  std::vector<float> c(1);
  cpu::gemm(false, false, 1, 1, 3, 1.0f, a.data(), 3, 0, b.data(), 1, 0, 0.0f, c.data(), 1, 0, 1, GemmMode::bf16);
  CHECK(c[0] == 3.0f + 0x1p-6f);
  cpu::gemm(false, false, 1, 1, 3, 1.0f, a.data(), 3, 0, b.data(), 1, 0, 0.0f, c.data(), 1, 0, 1, GemmMode::fp32);
  CHECK(c[0] == 3.0f + 0x5p-8f);
}

TEST_CASE("cpu bf16 linear: bias and residual summed in fp32, rounded once") {
  if (!testing::cpu_runs_bf16_products()) return;
  const int64_t rows = 37, in = 48, out = 24;
  const std::vector<float> x = bf16_valued(rows * in, 4), w = bf16_valued(out * in, 5), bias = bf16_valued(out, 6),
                           residual = bf16_valued(rows * out, 7);
  std::vector<float> exact(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < out; ++c) {
      double s = static_cast<double>(bias[c]) + residual[r * out + c];
      for (int64_t i = 0; i < in; ++i) s += static_cast<double>(x[r * in + i]) * w[c * in + i];
      exact[static_cast<size_t>(r * out + c)] = static_cast<float>(s);
    }
  const std::vector<bf16> x16 = as_bf16(x), w16 = as_bf16(w), bias16 = as_bf16(bias), residual16 = as_bf16(residual);
  std::vector<bf16> separate(static_cast<size_t>(rows * out)), in_place = residual16;
  cpu::linear_bf16(rows, in, out, x16.data(), w16.data(), bias16.data(), residual16.data(), separate.data());
  cpu::linear_bf16(rows, in, out, x16.data(), w16.data(), bias16.data(), in_place.data(), in_place.data());
  for (size_t i = 0; i < exact.size(); ++i) {
    CAPTURE(i);
    // One rounding of a value within fp32 accumulation error of the exact sum: at most one bf16
    // step (2^-7 relative) from it.
    const float got = static_cast<float>(separate[i]);
    CHECK(std::fabs(got - exact[i]) <= std::fabs(exact[i]) * 0x1p-8f + 1e-6f);
    CHECK(separate[i].bits == in_place[i].bits);
  }
  if (cpu::bf16_products_native()) CHECK(cpu::bf16_reference_products() == 0);
  std::vector<bf16> no_residual(static_cast<size_t>(rows * out));
  cpu::linear_bf16(rows, in, out, x16.data(), w16.data(), bias16.data(), nullptr, no_residual.data());
  const float expected0 = exact[0] - residual[0];
  CHECK(std::fabs(static_cast<float>(no_residual[0]) - expected0) <= std::fabs(expected0) * 0x1p-8f + 1e-6f);
  // No inner dimension: bias + residual.
  cpu::linear_bf16(rows, 0, out, x16.data(), w16.data(), bias16.data(), residual16.data(), separate.data());
  CHECK(static_cast<float>(separate[5]) == static_cast<float>(bf16(bias[5] + residual[5])));
}

TEST_CASE("cpu bf16 linear with GELU: the exact GELU of the fp32 sum, rounded once, on the fast kernel") {
  if (!testing::cpu_runs_bf16_products()) return;
  // ViT-B/16's fc1 shape at a few rows (768 → 3072), inputs spread so that the sums cover GELU's
  // curved range.
  const int64_t rows = 19, in = 768, out = 3072;
  const std::vector<float> x = bf16_valued(rows * in, 10), w = bf16_valued(out * in, 11), bias = bf16_valued(out, 12);
  const std::vector<bf16> x16 = as_bf16(x), w16 = as_bf16(w), bias16 = as_bf16(bias);
  const int64_t before = cpu::bf16_reference_products();
  std::vector<bf16> got(static_cast<size_t>(rows * out)), linear(got.size());
  cpu::linear_gelu_bf16(rows, in, out, x16.data(), w16.data(), bias16.data(), got.data(), GeluForm::erf);
  cpu::linear_bf16(rows, in, out, x16.data(), w16.data(), bias16.data(), nullptr, linear.data());
  int64_t differ = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < out; ++c) {
      double s = bias[c];
      for (int64_t i = 0; i < in; ++i) s += static_cast<double>(x[r * in + i]) * w[c * in + i];
      const double exact = 0.5 * s * (1.0 + std::erf(s / std::sqrt(2.0)));
      const size_t at = static_cast<size_t>(r * out + c);
      CAPTURE(s);
      // One rounding of a value within fp32 error of the exact one: at most one bf16 step; the
      // absolute term covers GELU's values near zero, where the fp32 sum's error dominates.
      CHECK(std::fabs(static_cast<float>(got[at]) - exact) <= std::fabs(exact) * 0x1p-8 + 1e-4);
      // The two-step path (the product rounded to bf16, then the GELU) differs by a rounding.
      differ += got[at].bits != bf16(0.5f * static_cast<float>(linear[at]) *
                                     (1.0f + std::erf(static_cast<float>(linear[at]) / std::sqrt(2.0f)))).bits;
    }
  CHECK(differ > 0);  // the GELU did run on the unrounded sums
  if (cpu::bf16_products_native()) CHECK(cpu::bf16_reference_products() == before);
  // No inner dimension: the GELU of the bias.
  cpu::linear_gelu_bf16(rows, 0, out, x16.data(), w16.data(), bias16.data(), got.data(), GeluForm::erf);
  const float b5 = bias[5];
  CHECK(std::fabs(static_cast<float>(got[5]) - 0.5f * b5 * (1.0f + std::erf(b5 / std::sqrt(2.0f)))) <= 0x1p-8f);
}

TEST_CASE("cpu bf16 gemm: the result does not depend on the thread count") {
  if (!testing::cpu_runs_bf16_products()) return;
  // ViT-B/16's fc2 at a few rows: oneDNN must not split the 3072-long sums by thread.
  const int64_t m = 64, n = 768, k = 3072;
  const std::vector<bf16> a = as_bf16(bf16_valued(m * k, 8)), b = as_bf16(bf16_valued(n * k, 9));
  std::vector<float> one(static_cast<size_t>(m * n)), two(static_cast<size_t>(m * n));
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  cpu::gemm_bf16(false, true, m, n, k, 1.0f, a.data(), k, 0, b.data(), k, 0, 0.0f, one.data(), n, 0, 1);
  omp_set_num_threads(2);
  cpu::gemm_bf16(false, true, m, n, k, 1.0f, a.data(), k, 0, b.data(), k, 0, 0.0f, two.data(), n, 0, 1);
  omp_set_num_threads(threads);
  CHECK(one == two);
}

TEST_CASE("--precision on the CPU: tf32 refused, bf16 where the processor multiplies bf16 natively") {
  CHECK_THROWS_WITH(select_matmul_precision("tf32", Device::cpu()), doctest::Contains("needs a CUDA device"));
  if (cpu::bf16_products_native()) {
    CHECK(select_matmul_precision("bf16", Device::cpu()) == MatmulPrecision::bf16);
  } else {
    CHECK_THROWS_WITH(select_matmul_precision("bf16", Device::cpu()), doctest::Contains("has no AVX512-BF16"));
  }
  CHECK(select_matmul_precision("auto", Device::cpu()) == MatmulPrecision::fp32);
  CHECK(select_matmul_precision("auto", Device::cuda()) == MatmulPrecision::bf16);
  CHECK(engine_settings().matmul_precision == MatmulPrecision::fp32);  // selecting sets nothing
}

TEST_CASE("cpu bf16 gemm: a processor without oneDNN's bf16 kernels gets a message that says what to do") {
  CHECK((!cpu::bf16_products_native() || cpu::bf16_products_available()));  // native implies available
  if (cpu::bf16_products_available()) return;
  const std::vector<bf16> a(4, bf16(1.0f)), b(4, bf16(1.0f));
  std::vector<float> c(4);
  CHECK_THROWS_WITH(cpu::gemm_bf16(false, false, 2, 2, 2, 1.0f, a.data(), 2, 0, b.data(), 2, 0, 0.0f, c.data(), 2, 0, 1),
                    doctest::Contains("no AVX-512, which oneDNN's bf16 products need; compute in fp32 (--precision fp32)"));
}

TEST_CASE("cpu bf16 products: attention's scale in the product's alpha gives the bits of a multiplication after it") {
  if (!testing::cpu_runs_bf16_products()) return;
  const ScopedEngineSettings bf16_products(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
  const int64_t before = cpu::bf16_reference_products();
  const std::vector<float> a = bf16_valued(2 * 12 * 197 * 64, 20), b = bf16_valued(2 * 12 * 197 * 64, 21);
  const Tensor qa = from_vector<float>(a, {2, 12, 197, 64}), kb = from_vector<float>(b, {2, 12, 197, 64});
  CHECK(matmul_transposed(qa, kb, 0.125).to_vector<float>() == (matmul_transposed(qa, kb) * 0.125).to_vector<float>());
  if (cpu::bf16_products_native()) CHECK(cpu::bf16_reference_products() == before);
}
