#include "data/augment_plan.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>

#include "engine/error.h"

namespace mcdl {
namespace {

// CPython's math.degrees / math.radians constants.
constexpr double rad_to_deg = 180.0 / std::numbers::pi;
constexpr double deg_to_rad = std::numbers::pi / 180.0;

// torchvision _get_inverse_affine_matrix(center, angle, translate, scale=1, shear), in the same
// operation order (the inverse map PIL's AFFINE transform takes).
AffineMatrix inverse_affine_matrix(double cx, double cy, double angle, double tx, double ty, double shear_x,
                                   double shear_y) {
  const double rot = angle * deg_to_rad, sx = shear_x * deg_to_rad, sy = shear_y * deg_to_rad;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  AffineMatrix m = {d, -b, 0.0, -c, a, 0.0};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// Python's round(x, 15): correctly rounded to 15 decimals (glibc's printf is exact).
double round15(double x) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.15f", x);
  return std::strtod(buffer, nullptr);
}

}  // namespace

AffineMatrix affine_op_matrix(AugmentOp op, double magnitude, int64_t height, int64_t width) {
  const double m = magnitude, cx = static_cast<double>(width) * 0.5, cy = static_cast<double>(height) * 0.5;
  switch (op) {
    case AugmentOp::shear_x:  // F.affine(shear=[degrees(atan(m)), 0], center=[0, 0])
      return inverse_affine_matrix(0, 0, 0, 0, 0, std::atan(m) * rad_to_deg, 0);
    case AugmentOp::shear_y:
      return inverse_affine_matrix(0, 0, 0, 0, 0, 0, std::atan(m) * rad_to_deg);
    case AugmentOp::translate_x:  // F.affine(translate=[int(m), 0]) about the centre
      return inverse_affine_matrix(cx, cy, 0, std::trunc(m), 0, 0, 0);
    case AugmentOp::translate_y:
      return inverse_affine_matrix(cx, cy, 0, 0, std::trunc(m), 0, 0);
    default:
      fail("affine_op_matrix: ", augment_op_name(op), " is not a shear or translation");
  }
}

RotatePlan plan_rotate(double angle, int64_t height, int64_t width) {
  angle = std::fmod(angle, 360.0);  // Python's float %: the sign of the divisor
  if (angle < 0.0) angle += 360.0;
  RotatePlan plan;
  if (angle == 0.0) return plan;
  if (angle == 180.0 || ((angle == 90.0 || angle == 270.0) && width == height)) {
    plan.kind = RotatePlan::Kind::quarter_turns;
    plan.quarter_turns = static_cast<int>(angle / 90.0);
    return plan;
  }
  const double cx = static_cast<double>(width) / 2.0, cy = static_cast<double>(height) / 2.0;
  const double rad = -(angle * deg_to_rad);
  AffineMatrix& m = plan.matrix;
  m = {round15(std::cos(rad)), round15(std::sin(rad)), 0.0, round15(-std::sin(rad)), round15(std::cos(rad)), 0.0};
  m[2] = m[0] * -cx + m[1] * -cy + m[2];
  m[5] = m[3] * -cx + m[4] * -cy + m[5];
  m[2] += cx;
  m[5] += cy;
  plan.kind = RotatePlan::Kind::affine;
  return plan;
}

}  // namespace mcdl
