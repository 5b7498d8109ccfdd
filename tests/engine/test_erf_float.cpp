// The CPU GELU's four-lane erf (kernels/cpu/erf_float.h) against erf in double: within 1.14 ulp
// over a sweep of the floats in [0, 4.5] (every float, offline, gives 1.137 at 1.0064), odd,
// the special values, and every length (the padded last group); the GELU's sixteen-lane path
// against the four-lane formula, bit for bit; the GELU's float backward against the exact slope,
// and its sixteen-lane path against the four-lane formula.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/erf_float.h"
#include "kernels/cpu/exp_float.h"
#include "kernels/cpu/gelu_float.h"

using mcdl::cpu::erf_float;

namespace {

// |got − erf(x)| in units of the last place of the float nearest erf(x) (the smaller ulp at a
// power of two).
double ulp_error(float got, float x) {
  const double exact = std::erf(static_cast<double>(x));
  const float nearest = static_cast<float>(exact);
  double ulp = std::nextafter(nearest, 2.0f) - nearest;
  const double below = nearest - std::nextafter(nearest, 0.0f);
  if (below > 0 && below < ulp) ulp = below;
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

}  // namespace

TEST_CASE("erf_float: within 1.14 ulp of erf over [0, 4.5], odd, exact at the special values") {
  uint32_t first, last;
  const float lo = 0.0f, hi = 4.5f;
  std::memcpy(&first, &lo, sizeof first);
  std::memcpy(&last, &hi, sizeof last);
  std::vector<float> xs;
  for (uint64_t b = first + 1; b <= last; b += 97) {  // 11 million floats, every binade
    float x;
    const auto bits = static_cast<uint32_t>(b);
    std::memcpy(&x, &bits, sizeof x);
    xs.push_back(x);
  }
  for (float x : {1.0064373f, 1.0f, 2.2f, 3.92f, std::nextafter(1.0f, 0.0f), std::nextafter(2.2f, 0.0f),
                  std::nextafter(3.92f, 0.0f), 1e-30f, std::numeric_limits<float>::denorm_min()})
    xs.push_back(x);
  std::vector<float> ys(xs.size()), negated(xs.size()), ys_negated(xs.size());
  erf_float(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
  double worst = 0;
  float worst_at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double error = ulp_error(ys[i], xs[i]);
    if (error > worst) {
      worst = error;
      worst_at = xs[i];
    }
    negated[i] = -xs[i];
  }
  CAPTURE(worst_at);
  CHECK(worst <= 1.14);
  erf_float(negated.data(), ys_negated.data(), static_cast<int64_t>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) REQUIRE(ys_negated[i] == -ys[i]);

  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {0.0f, -0.0f, inf, -inf, std::nanf(""), 100.0f, -7.5f};
  std::vector<float> out(special.size());
  erf_float(special.data(), out.data(), static_cast<int64_t>(special.size()));
  CHECK(out[0] == 0.0f);
  CHECK_FALSE(std::signbit(out[0]));
  CHECK(out[1] == 0.0f);
  CHECK(std::signbit(out[1]));
  CHECK(out[2] == 1.0f);
  CHECK(out[3] == -1.0f);
  CHECK(std::isnan(out[4]));
  CHECK(out[5] == 1.0f);
  CHECK(out[6] == -1.0f);
}

TEST_CASE("erf_float: any length gives each element's own value (the last group padded)") {
  std::vector<float> xs;
  for (int i = 0; i < 11; ++i) xs.push_back(-2.5f + 0.45f * static_cast<float>(i));
  std::vector<float> all(xs.size());
  erf_float(xs.data(), all.data(), static_cast<int64_t>(xs.size()));
  for (int64_t n = 0; n <= static_cast<int64_t>(xs.size()); ++n) {
    std::vector<float> part(static_cast<size_t>(n) + 1, 42.0f);  // one past the end stays untouched
    erf_float(xs.data(), part.data(), n);
    for (int64_t i = 0; i < n; ++i) CHECK(part[static_cast<size_t>(i)] == all[static_cast<size_t>(i)]);
    CHECK(part[static_cast<size_t>(n)] == 42.0f);
  }
}

TEST_CASE("gelu_float: the sixteen-lane path (AVX-512) gives the four-lane formula's bits") {
  // Inputs across every piece of the erf (|x/√2| below 1, up to 2.2, up to 3.92, beyond), both signs,
  // and lengths that leave a remainder after the sixteen-lane groups.
  std::vector<float> x;
  for (float v = -8.0f; v <= 8.0f; v += 0.000731f) x.push_back(v);
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  const float inv_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
  std::vector<float> expected(x.size()), got(x.size());
  mcdl::cpu::map_f32x4(x.data(), expected.data(), static_cast<int64_t>(x.size()), [&](mcdl::cpu::f32x4 v) {
    return 0.5f * v * (1.0f + mcdl::cpu::erf_f32x4(v * inv_sqrt2));
  });
  for (int64_t length : {static_cast<int64_t>(x.size()), int64_t(37), int64_t(16), int64_t(3)}) {
    CAPTURE(length);
    mcdl::cpu::gelu_float(x.data(), got.data(), length);
    CHECK(std::memcmp(expected.data(), got.data(), static_cast<size_t>(length) * sizeof(float)) == 0);
  }
  if (!mcdl::cpu::has_avx512f()) MESSAGE("no AVX-512 here: only the four-lane path ran");
}

namespace {

// The exact slope Φ(x) + x·φ(x), in double.
double exact_gelu_slope(double v) {
  return 0.5 * (1.0 + std::erf(v / std::sqrt(2.0))) + v / std::sqrt(2.0 * std::numbers::pi) * std::exp(-0.5 * v * v);
}

}  // namespace

TEST_CASE("gelu_backward_float: within 2e-7 of the exact slope times the gradient, overwrite and accumulate") {
  // 2e-7 is about 1.7 ulp of the slope's largest value (1.13); measured worst 1.35e-7 at 1.543.
  std::vector<float> x, g, before;
  for (float v = -12.0f; v <= 12.0f; v += 0.0000731f) {
    x.push_back(v);
    g.push_back(x.size() % 3 == 0 ? -2.0f : 0.5f);  // exact powers of two: the product adds no error
    before.push_back(x.size() % 2 == 0 ? 1.0f : -0.25f);
  }
  const auto n = static_cast<int64_t>(x.size());
  std::vector<float> overwritten(x.size(), 42.0f), accumulated = before;
  mcdl::cpu::gelu_backward_float(x.data(), g.data(), overwritten.data(), n, true);
  mcdl::cpu::gelu_backward_float(x.data(), g.data(), accumulated.data(), n, false);
  double worst = 0;
  float worst_at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double slope = exact_gelu_slope(x[i]);
    const double error = std::fabs(overwritten[i] / g[i] - slope);
    if (error > worst) {
      worst = error;
      worst_at = x[i];
    }
    REQUIRE(accumulated[i] == before[i] + overwritten[i]);
  }
  CAPTURE(worst_at);
  CHECK(worst <= 2e-7);

  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {0.0f, 10.0f, -10.0f, std::nanf("")}, ones(special.size(), 1.0f);
  std::vector<float> slope(special.size());
  mcdl::cpu::gelu_backward_float(special.data(), ones.data(), slope.data(), 4, true);
  CHECK(slope[0] == 0.5f);
  CHECK(slope[1] == 1.0f);
  CHECK(std::fabs(slope[2]) < 1e-20f);  // Φ(−10) + (−10)·φ(−10) ≈ −7.6e-22
  CHECK(std::isnan(slope[3]));
  const float infinite = inf;
  float infinite_slope = 0;
  mcdl::cpu::gelu_backward_float(&infinite, ones.data(), &infinite_slope, 1, true);
  CHECK(std::isnan(infinite_slope));  // inf·φ(inf) = inf·0, as the CUDA kernel and PyTorch give
}

TEST_CASE("gelu_backward_float: the sixteen-lane path gives the four-lane formula's bits, any length") {
  std::vector<float> x, g, before;
  for (float v = -8.0f; v <= 8.0f; v += 0.000731f) {
    x.push_back(v);
    g.push_back(0.1f * static_cast<float>(x.size() % 7) - 0.3f);
    before.push_back(0.01f * static_cast<float>(x.size() % 5));
  }
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  g.push_back(1.0f);
  before.push_back(0.0f);
  const float inv_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
  const float inv_sqrt_2pi = static_cast<float>(1.0 / std::sqrt(2.0 * std::numbers::pi));
  std::vector<float> slope(x.size());
  mcdl::cpu::map_f32x4(x.data(), slope.data(), static_cast<int64_t>(x.size()), [&](mcdl::cpu::f32x4 v) {
    return 0.5f * (1.0f + mcdl::cpu::erf_f32x4(v * inv_sqrt2)) + v * inv_sqrt_2pi * mcdl::cpu::exp_f32x4(-0.5f * v * v);
  });
  for (bool overwrite : {true, false}) {
    for (int64_t length : {static_cast<int64_t>(x.size()), int64_t(37), int64_t(16), int64_t(3), int64_t(0)}) {
      CAPTURE(overwrite);
      CAPTURE(length);
      std::vector<float> got = before;
      mcdl::cpu::gelu_backward_float(x.data(), g.data(), got.data(), length, overwrite);
      for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
        const auto k = static_cast<size_t>(i);
        const float product = g[k] * slope[k];
        const float expected = i >= length ? before[k] : overwrite ? product : before[k] + product;
        REQUIRE(std::memcmp(&expected, &got[k], sizeof expected) == 0);  // NaN's bits too
      }
    }
  }
}
