// The host's float row passes (kernels/cpu/row_float.h) against the order they document: sixteen
// partial sums added pairwise, each element's own exp and LayerNorm formula, bit for bit on any
// length (whichever lane width the processor takes); and against double precision.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/exp_float.h"
#include "kernels/cpu/row_float.h"

namespace {

// Σ values in the documented order: partial l adds elements l, l + 16, … in turn; then pairwise.
float documented_sum(const std::vector<float>& values) {
  float partial[16] = {};
  for (size_t i = 0; i < values.size(); ++i) partial[i % 16] += values[i];
  for (int half = 8; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) partial[l] += partial[l + half];
  return partial[0];
}

float exp_of(float x) {
  const mcdl::cpu::f32x4 v = {x, x, x, x};
  return mcdl::cpu::exp_f32x4(v)[0];
}

std::vector<float> wavy_row(int64_t n, float scale) {
  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) row[static_cast<size_t>(i)] = scale * std::sin(0.37f * static_cast<float>(i) + 0.5f) + 0.01f * static_cast<float>(i);
  return row;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("softmax_numerators: the documented order's bits at every length, and the double softmax") {
  for (int64_t n : {1, 5, 15, 16, 17, 31, 197, 256, 1000}) {
    CAPTURE(n);
    const std::vector<float> row = wavy_row(n, 6.0f);
    const float top = *std::max_element(row.begin(), row.end());
    std::vector<float> expected(row.size());
    for (size_t i = 0; i < row.size(); ++i) expected[i] = exp_of(row[i] - top);
    std::vector<float> got = row;
    const float sum = mcdl::cpu::softmax_numerators(got.data(), n);
    CHECK(same_bits(got, expected));
    const float expected_sum = documented_sum(expected);
    CHECK(std::memcmp(&sum, &expected_sum, sizeof sum) == 0);

    double exact_sum = 0;
    for (float x : row) exact_sum += std::exp(static_cast<double>(x) - top);
    for (size_t i = 0; i < row.size(); ++i)
      CHECK(got[i] / sum == doctest::Approx(std::exp(static_cast<double>(row[i]) - top) / exact_sum).epsilon(1e-6));
  }
}

TEST_CASE("softmax_numerators: -inf scores give 0 and NaN stays NaN") {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> row = {1.0f, -inf, 1.0f, -inf, 0.0f};
  CHECK(mcdl::cpu::softmax_numerators(row.data(), 5) == doctest::Approx(2.0 + std::exp(-1.0)));
  CHECK(row[1] == 0.0f);
  CHECK(row[0] == 1.0f);
  row = {1.0f, std::nanf(""), 2.0f};
  mcdl::cpu::softmax_numerators(row.data(), 3);
  CHECK(std::isnan(row[1]));
}

TEST_CASE("layer_norm_row: the documented order's bits at every length, in place too, and the double formula") {
  for (int64_t d : {1, 7, 16, 33, 384, 768, 1001}) {
    CAPTURE(d);
    const std::vector<float> x = wavy_row(d, 3.0f), gamma = wavy_row(d, 0.5f), beta = wavy_row(d, 0.2f);
    const float eps = 1e-6f;
    const float mean = documented_sum(x) / static_cast<float>(d);
    std::vector<float> squares(x.size());
    for (size_t i = 0; i < x.size(); ++i) squares[i] = (x[i] - mean) * (x[i] - mean);
    const float rstd = 1.0f / std::sqrt(documented_sum(squares) / static_cast<float>(d) + eps);
    std::vector<float> expected(x.size());
    for (size_t i = 0; i < x.size(); ++i) expected[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];

    std::vector<float> got(x.size());
    mcdl::cpu::layer_norm_row(x.data(), gamma.data(), beta.data(), got.data(), d, eps);
    CHECK(same_bits(got, expected));
    std::vector<float> in_place = x;
    mcdl::cpu::layer_norm_row(in_place.data(), gamma.data(), beta.data(), in_place.data(), d, eps);
    CHECK(same_bits(in_place, expected));

    double exact_mean = 0, exact_var = 0;
    for (float v : x) exact_mean += v;
    exact_mean /= static_cast<double>(d);
    for (float v : x) exact_var += (v - exact_mean) * (v - exact_mean);
    const double exact_rstd = 1.0 / std::sqrt(exact_var / static_cast<double>(d) + eps);
    for (size_t i = 0; i < x.size(); ++i)
      CHECK(got[i] == doctest::Approx((x[i] - exact_mean) * exact_rstd * gamma[i] + beta[i]).epsilon(1e-5).scale(1.0));
  }
  if (!mcdl::cpu::has_avx512f()) MESSAGE("no AVX-512 here: only the four-lane path ran");
}
