// torchvision (>= 0.12, checked against 0.14.1) RandAugment(num_ops, magnitude, num_magnitude_bins)
// with NEAREST interpolation and black fill, on uint8 "RGB" or "L" images, bit-exact against
// torchvision's PIL path (Pillow 9.4). Reference: docs/backbone-and-data-facts.md §3.3.
//
// Drawing and applying are separate: draw_randaugment picks the ops and signed magnitudes (from
// the engine's RandomStream, so the distribution matches torchvision, not its stream), and
// apply_augment runs one step with the Pillow arithmetic of data/augment_ops.h.
#pragma once
#include <cstddef>  // size_t, which data/image.h uses without including
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/image.h"
#include "engine/random.h"

namespace mcdl {

// The 14 ops in torchvision's _augmentation_space order (the index randint(14) picks).
enum class AugmentOp {
  identity,
  shear_x,
  shear_y,
  translate_x,
  translate_y,
  rotate,
  brightness,
  color,
  contrast,
  sharpness,
  posterize,
  solarize,
  auto_contrast,
  equalize,
};
constexpr int num_augment_ops = 14;

// torchvision's names: "Identity", "ShearX", ..., "AutoContrast", "Equalize".
std::string_view augment_op_name(AugmentOp op);
// The op of a torchvision name (case-insensitive), or nullopt.
std::optional<AugmentOp> augment_op_from_name(std::string_view name);
// Whether RandAugment draws a random sign for the op (geometric and enhance ops).
bool augment_op_signed(AugmentOp op);

// One op with its final magnitude (signed, ready to apply):
//   ShearX/ShearY: shear factor m (inverse map x_src = x + m·y about the top-left corner);
//   TranslateX/Y: pixels, truncated toward zero when applied (positive moves the content right/down);
//   Rotate: degrees counter-clockwise about the centre;
//   Brightness/Color/Contrast/Sharpness: enhance factor 1 + m;
//   Posterize: bits kept (int(m)); Solarize: threshold; Identity/AutoContrast/Equalize: unused (0).
struct AugmentStep {
  AugmentOp op = AugmentOp::identity;
  double magnitude = 0.0;
};

// The unsigned magnitude of bin `bin` of `num_bins` for an image of height × width:
// float(torch table[bin]) of torchvision's _augmentation_space (float32 tables; bin 9 of 31 is
// identical to torch 1.13's values; other bins can differ from torch by one float32 ulp because
// torch's vectorised linspace rounds differently).
double augment_magnitude(AugmentOp op, int bin, int num_bins, int64_t height, int64_t width);

// RandAugment.forward's draws: for each of num_ops ops, op = randint(14), magnitude = table[bin],
// and for a signed op a fair coin for the sign.
std::vector<AugmentStep> draw_randaugment(RandomStream& stream, int64_t height, int64_t width, int num_ops = 2,
                                          int magnitude = 9, int num_bins = 31);

// torchvision autoaugment._apply_op(img, name, magnitude, NEAREST, fill=None) on a PIL image.
Image apply_augment(const Image& image, const AugmentStep& step);
// The steps in order.
Image apply_randaugment(const Image& image, const std::vector<AugmentStep>& steps);

}  // namespace mcdl
