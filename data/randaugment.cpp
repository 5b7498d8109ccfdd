#include "data/randaugment.h"

#include <array>
#include <cctype>
#include <cmath>

#include "data/augment_ops.h"
#include "data/augment_plan.h"
#include "engine/error.h"
#include "kernels/augment_math.h"

namespace mcdl {
namespace {

constexpr std::array<std::string_view, num_augment_ops> op_names = {
    "Identity",   "ShearX", "ShearY",    "TranslateX", "TranslateY", "Rotate",       "Brightness",
    "Color",      "Contrast", "Sharpness", "Posterize", "Solarize",   "AutoContrast", "Equalize"};

// torch.linspace(start, end, steps)[index] in float32 as torch 1.13's CPU kernel computes it:
// step = (end − start)/(steps − 1); the first 16·⌊steps/16⌋ values come in 8-wide vectors
// base + k·step, with base = start + step·b (b < steps/2) or end − step·(steps − 1 − b); the
// rest are start + step·i (first half) or end − step·(steps − 1 − i).
float linspace_f32(float start, float end, int steps, int index) {
  if (steps == 1) return start;
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  const auto scalar = [&](int i) {
    return i < halfway ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - i - 1);
  };
  constexpr int width = 8;
  if (index < (steps / (2 * width)) * 2 * width) {
    const int base_index = index / width * width;
    return scalar(base_index) + static_cast<float>(index - base_index) * step;
  }
  return scalar(index);
}

Image affine(const Image& image, const AffineMatrix& m) {
  Image out(image.height, image.width, image.channels);
  pixel_ops::affine_nearest(image.pixels.data(), out.pixels.data(), image.height, image.width, image.channels,
                            m.data());
  return out;
}

// PIL Image.rotate(angle, NEAREST, expand=False, center=None, fillcolor=0).
Image pil_rotate(const Image& image, double angle) {
  const RotatePlan plan = plan_rotate(angle, image.height, image.width);
  switch (plan.kind) {
    case RotatePlan::Kind::identity:
      return image;
    case RotatePlan::Kind::quarter_turns: {
      Image out(image.height, image.width, image.channels);
      pixel_ops::rotate_quarter_turns(image.pixels.data(), out.pixels.data(), image.height, image.width,
                                      image.channels, plan.quarter_turns);
      return out;
    }
    case RotatePlan::Kind::affine:
      return affine(image, plan.matrix);
  }
  fail("apply_augment: unknown rotate plan");
}

Image blend_with(const Image& degenerate, const Image& image, double factor) {
  Image out(image.height, image.width, image.channels);
  pixel_ops::blend(degenerate.pixels.data(), image.pixels.data(), out.pixels.data(),
                   static_cast<int64_t>(image.pixels.size()), static_cast<float>(factor));
  return out;
}

// ImageEnhance.Color's degenerate: convert("L").convert(mode).
Image grey_version(const Image& image) {
  if (image.channels == 1) return image;
  Image out(image.height, image.width, 3);
  pixel_ops::grey_rgb(image.pixels.data(), out.pixels.data(), image.height * image.width);
  return out;
}

Image with_luts(const Image& image, const std::vector<uint8_t>& luts) {
  Image out(image.height, image.width, image.channels);
  pixel_ops::apply_luts(image.pixels.data(), out.pixels.data(), image.height * image.width, image.channels,
                        luts.data());
  return out;
}

// A blend whose degenerate image is one value everywhere (Brightness: black; Contrast: the grey
// level) depends on each pixel's own value only: the same blend_value, tabulated over 0..255.
Image blend_with_constant(uint8_t degenerate, const Image& image, double factor) {
  std::vector<uint8_t> luts(static_cast<size_t>(256 * image.channels));
  for (size_t v = 0; v < luts.size(); ++v)
    luts[v] = pixel_math::blend_value(degenerate, static_cast<int>(v % 256), static_cast<float>(factor));
  return with_luts(image, luts);
}

// One table per channel, each computed from that channel's histogram.
template <class LutOfHistogram>
Image histogram_op(const Image& image, LutOfHistogram lut_of) {
  std::vector<int64_t> hist(static_cast<size_t>(256 * image.channels));
  pixel_ops::histogram(image.pixels.data(), image.height * image.width, image.channels, hist.data());
  std::vector<uint8_t> luts(static_cast<size_t>(256 * image.channels));
  for (int64_t c = 0; c < image.channels; ++c) lut_of(&hist[static_cast<size_t>(256 * c)], &luts[static_cast<size_t>(256 * c)]);
  return with_luts(image, luts);
}

Image same_lut_for_all_channels(const Image& image, const uint8_t* lut) {
  std::vector<uint8_t> luts(static_cast<size_t>(256 * image.channels));
  for (int64_t c = 0; c < image.channels; ++c) std::copy(lut, lut + 256, luts.begin() + 256 * c);
  return with_luts(image, luts);
}

}  // namespace

std::string_view augment_op_name(AugmentOp op) { return op_names[static_cast<size_t>(op)]; }

std::optional<AugmentOp> augment_op_from_name(std::string_view name) {
  for (int i = 0; i < num_augment_ops; ++i) {
    const std::string_view candidate = op_names[static_cast<size_t>(i)];
    if (candidate.size() != name.size()) continue;
    bool same = true;
    for (size_t k = 0; k < name.size() && same; ++k)
      same = std::tolower(static_cast<unsigned char>(name[k])) == std::tolower(static_cast<unsigned char>(candidate[k]));
    if (same) return static_cast<AugmentOp>(i);
  }
  return std::nullopt;
}

bool augment_op_signed(AugmentOp op) {
  return op >= AugmentOp::shear_x && op <= AugmentOp::sharpness;
}

double augment_magnitude(AugmentOp op, int bin, int num_bins, int64_t height, int64_t width) {
  check(num_bins >= 2 && bin >= 0 && bin < num_bins, "augment_magnitude: bin ", bin, " of ", num_bins,
        " magnitude bins");
  switch (op) {
    case AugmentOp::identity:
    case AugmentOp::auto_contrast:
    case AugmentOp::equalize:
      return 0.0;
    case AugmentOp::shear_x:
    case AugmentOp::shear_y:
      return linspace_f32(0.0f, 0.3f, num_bins, bin);
    case AugmentOp::translate_x:
      return linspace_f32(0.0f, static_cast<float>(150.0 / 331.0 * static_cast<double>(width)), num_bins, bin);
    case AugmentOp::translate_y:
      return linspace_f32(0.0f, static_cast<float>(150.0 / 331.0 * static_cast<double>(height)), num_bins, bin);
    case AugmentOp::rotate:
      return linspace_f32(0.0f, 30.0f, num_bins, bin);
    case AugmentOp::brightness:
    case AugmentOp::color:
    case AugmentOp::contrast:
    case AugmentOp::sharpness:
      return linspace_f32(0.0f, 0.9f, num_bins, bin);
    case AugmentOp::posterize: {
      // 8 − (arange(num_bins) / ((num_bins − 1) / 4)).round().int(): float32, round half to even.
      const float q = static_cast<float>(bin) / static_cast<float>((num_bins - 1) / 4.0);
      return 8 - static_cast<int>(std::nearbyint(q));
    }
    case AugmentOp::solarize:
      return linspace_f32(255.0f, 0.0f, num_bins, bin);
  }
  fail("augment_magnitude: unknown op");
}

std::vector<AugmentStep> draw_randaugment(RandomStream& stream, int64_t height, int64_t width, int num_ops,
                                          int magnitude, int num_bins) {
  check(num_ops >= 0, "draw_randaugment: num_ops must be >= 0, got ", num_ops);
  std::vector<AugmentStep> steps;
  for (int i = 0; i < num_ops; ++i) {
    const auto op = static_cast<AugmentOp>(stream.randint(0, num_augment_ops));
    double value = augment_magnitude(op, magnitude, num_bins, height, width);
    if (augment_op_signed(op) && stream.randint(0, 2) == 1) value = -value;
    steps.push_back({op, value});
  }
  return steps;
}

Image apply_augment(const Image& image, const AugmentStep& step) {
  check(image.channels == 3 || image.channels == 1, "apply_augment: ", augment_op_name(step.op),
        ": images have 3 or 1 channels, got ", image.channels);
  check(image.height > 0 && image.width > 0, "apply_augment: ", augment_op_name(step.op), ": empty image");
  const double m = step.magnitude;
  switch (step.op) {
    case AugmentOp::identity:
      return image;
    case AugmentOp::shear_x:
    case AugmentOp::shear_y:
    case AugmentOp::translate_x:
    case AugmentOp::translate_y:
      return affine(image, affine_op_matrix(step.op, m, image.height, image.width));
    case AugmentOp::rotate:
      return pil_rotate(image, m);
    case AugmentOp::brightness:
      return blend_with_constant(0, image, 1.0 + m);
    case AugmentOp::color:
      return blend_with(grey_version(image), image, 1.0 + m);
    case AugmentOp::contrast:
      return blend_with_constant(static_cast<uint8_t>(pixel_ops::contrast_grey_level(
                                     image.pixels.data(), image.height * image.width, image.channels)),
                                 image, 1.0 + m);
    case AugmentOp::sharpness: {
      Image smoothed(image.height, image.width, image.channels);
      pixel_ops::smooth(image.pixels.data(), smoothed.pixels.data(), image.height, image.width, image.channels);
      return blend_with(smoothed, image, 1.0 + m);
    }
    case AugmentOp::posterize: {
      const int bits = static_cast<int>(m);
      check(bits >= 0 && bits <= 8, "apply_augment: Posterize: bits must be in [0, 8], got ", m);
      uint8_t lut[256];
      pixel_ops::posterize_lut(bits, lut);
      return same_lut_for_all_channels(image, lut);
    }
    case AugmentOp::solarize: {
      uint8_t lut[256];
      pixel_ops::solarize_lut(m, lut);
      return same_lut_for_all_channels(image, lut);
    }
    case AugmentOp::auto_contrast:
      return histogram_op(image, pixel_ops::autocontrast_lut);
    case AugmentOp::equalize:
      return histogram_op(image, pixel_ops::equalize_lut);
  }
  fail("apply_augment: unknown op");
}

Image apply_randaugment(const Image& image, const std::vector<AugmentStep>& steps) {
  if (steps.empty()) return image;
  Image out = apply_augment(image, steps[0]);  // each op writes a new image: no copy of the input first
  for (size_t i = 1; i < steps.size(); ++i) out = apply_augment(out, steps[i]);
  return out;
}

}  // namespace mcdl
