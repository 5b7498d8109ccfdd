// The deterministic and random transforms of the GCD/SimGCD pipeline on uint8 images, with
// torchvision 0.14's semantics for PIL images (reference: docs/backbone-and-data-facts.md §3.2):
//   train: Resize(int(S/0.875), bicubic) → RandomCrop(S) → RandomHorizontalFlip(0.5) → ToTensor → Normalize
//   test:  Resize(int(S/0.875), bicubic) → CenterCrop(S) → ToTensor → Normalize
// The resize is deterministic (cache it per image); the random parameters come from the engine's
// RandomStream: the distributions match torchvision's, the streams do not.
#pragma once
#include <cstddef>  // size_t, which data/image.h uses without including
#include <cstdint>
#include <vector>

#include "data/image.h"
#include "engine/random.h"

namespace mcdl {

// The pipeline's sizes, parametric in the crop size S (224 for the paper's ViT-B/16, 28 for the
// Fashion-MNIST demo). crop_pct = 0.875 as in GCD/SimGCD: resize_size = int(S / 0.875)
// (224 → 256, 28 → 32).
struct TransformSizes {
  int64_t image_size = 224;
  int64_t resize_size() const { return static_cast<int64_t>(static_cast<double>(image_size) / 0.875); }
};

// PIL's Image.crop((left, top, left + width, top + height)): pixels outside the image are 0.
Image crop(const Image& image, int64_t top, int64_t left, int64_t height, int64_t width);

// torchvision F.center_crop: offsets int(round((H − h) / 2.0)) with Python's round-half-to-even
// (58.5 → 58, 59.5 → 60); a crop larger than the image pads with zeros, (crop − size) // 2 before.
Image center_crop(const Image& image, int64_t height, int64_t width);

// PIL transpose(FLIP_LEFT_RIGHT).
Image hflip(const Image& image);

// RandomCrop(size) (no padding) followed by RandomHorizontalFlip(0.5).
struct CropFlip {
  int64_t top = 0, left = 0;
  bool flip = false;
};
// top ~ U{0..H−size}, left ~ U{0..W−size} (both 0 without a draw when H = W = size, as
// torchvision), flip with probability 1/2. Throws when the image is smaller than the crop.
CropFlip draw_random_crop_flip(RandomStream& stream, int64_t height, int64_t width, int64_t size);
Image apply_crop_flip(const Image& image, const CropFlip& params, int64_t size);

// RandomResizedCrop(size, scale, ratio) parameters, torchvision's get_params: 10 tries of an
// area fraction ~ U(scale) and a log-uniform aspect ratio, w = round(sqrt(area·ratio)),
// h = round(sqrt(area/ratio)) (half to even); the first that fits gets a uniform position;
// otherwise a centred crop clamped to the ratio range.
struct ResizedCrop {
  int64_t top = 0, left = 0, height = 0, width = 0;
};
ResizedCrop draw_random_resized_crop(RandomStream& stream, int64_t height, int64_t width, double scale_min = 0.08,
                                     double scale_max = 1.0, double ratio_min = 3.0 / 4.0,
                                     double ratio_max = 4.0 / 3.0);
// The crop, then a Pillow bicubic resize to size × size.
Image apply_resized_crop(const Image& image, const ResizedCrop& params, int64_t size);

// Per-channel Normalize constants (float32, as torchvision's tensors).
struct Normalization {
  std::vector<float> mean, std;
  // ImageNet statistics, used by GCD/SimGCD for every RGB dataset.
  static Normalization imagenet();
  // The 1-channel default: Fashion-MNIST's training-set statistics (mean 0.2860, std 0.3530 of
  // x/255), the dataset this engine uses grayscale images for.
  static Normalization grayscale();
  // imagenet() for 3 channels, grayscale() for 1.
  static Normalization for_channels(int64_t channels);
};

// ToTensor + Normalize: out[c][y][x] = (float(p)/255 − mean[c]) / std[c] in float32, a true
// division, then a subtraction, then a division (bit-identical to torchvision's to_tensor and
// normalize). `out_chw` holds channels · height · width floats.
void to_tensor_normalize(const Image& image, const Normalization& norm, float* out_chw);

}  // namespace mcdl
