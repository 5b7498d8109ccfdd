// The geometry of RandAugment's geometric ops (ShearX/Y, TranslateX/Y, Rotate): the inverse
// maps and PIL's rotate fast paths, decided once here for both the CPU path
// (data/randaugment.cpp) and the GPU path (data/device_augment.cpp), so that the two apply the
// same numbers and give the same bytes.
#pragma once
#include <array>
#include <cstdint>

#include "data/randaugment.h"

namespace mcdl {

// PIL's AFFINE coefficients (a, b, c, d, e, f): output pixel (x, y) samples the input at
// (a·x + b·y + c, d·x + e·y + f).
using AffineMatrix = std::array<double, 6>;

// The inverse map of ShearX, ShearY, TranslateX or TranslateY with (signed) magnitude m on a
// height × width image, as torchvision's _apply_op calls F.affine: shear by degrees(atan(m))
// about the top-left corner, translate by int(m) pixels about the centre
// (torchvision _get_inverse_affine_matrix, in its operation order).
AffineMatrix affine_op_matrix(AugmentOp op, double magnitude, int64_t height, int64_t width);

// What PIL Image.rotate(angle, NEAREST, expand=False, center=None) does to a height × width
// image: nothing for angle ≡ 0 (mod 360), an exact transpose for 180° and, on a square image,
// 90° / 270°, otherwise an affine map about the centre with round(·, 15) coefficients.
struct RotatePlan {
  enum class Kind { identity, quarter_turns, affine };
  Kind kind = Kind::identity;
  int quarter_turns = 0;  // counter-clockwise, for Kind::quarter_turns
  AffineMatrix matrix{};  // for Kind::affine
};
RotatePlan plan_rotate(double angle, int64_t height, int64_t width);

}  // namespace mcdl
