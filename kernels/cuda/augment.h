// The training views' augmentation on the device, over a batch of uint8 images (the CUDA twin of
// data/transforms.cpp's crop + flip, data/randaugment.cpp's ops and to_tensor_normalize), one
// launch per stage with per-image parameters. The pixel arithmetic is kernels/augment_math.h's,
// shared with the CPU path, so the bytes (and the normalised floats) are the CPU's exactly.
// Launches are queued on the engine stream; every pointer is device memory.
#pragma once
#include <cstdint>

#include "kernels/augment_math.h"

namespace mcdl::cuda {

// One source image of a packed buffer and the crop taken from it: PIL crop((left, top, left + S,
// top + S)) (zero outside the image), then a horizontal flip when `flip`.
struct CropFlipParams {
  int64_t offset = 0;  // of the image's first byte in the packed buffer
  int64_t height = 0, width = 0;
  int64_t top = 0, left = 0;
  int32_t flip = 0;
};

// The kernel-level op of one image in one RandAugment stage (planned on the host from an
// AugmentStep: the affine path and matrix, the quarter turns, the blend factor).
enum StageOp : int32_t {
  stage_copy,           // Identity, Rotate by a multiple of 360°
  stage_affine,         // ShearX/Y, TranslateX/Y, Rotate: `affine`
  stage_quarter_turns,  // Rotate by 90°, 180°, 270°: `count` quarter turns
  stage_brightness,     // blend with black, factor `alpha`
  stage_color,          // blend with the L image (the image itself when 1-channel)
  stage_contrast,       // blend with the mean L level
  stage_sharpness,      // blend with filter(SMOOTH)
  stage_posterize,      // keep `count` bits
  stage_solarize,       // invert values ≥ `threshold`
  stage_auto_contrast,  // per-channel histogram stretch
  stage_equalize,       // per-channel histogram equalisation
};

struct StageParams {
  int32_t op = stage_copy;
  int32_t count = 0;  // quarter turns or posterize bits
  float alpha = 1.0f;
  double threshold = 0.0;
  pixel_math::AffinePlan affine;
};

// out[b] = the crop of image b of `packed` ([B, S, S, C] uint8).
void crop_flip(const uint8_t* packed, const CropFlipParams* params, uint8_t* out, int64_t batch, int64_t size,
               int64_t channels);

// dst[b] = the op params[b] applied to src[b] ([B, S, S, C] uint8, distinct buffers); one block
// per image (the histograms and the contrast mean are per-image integer reductions).
// `scratch` holds 2·S int32 per image (the scale path's source indices).
void augment_stage(const uint8_t* src, uint8_t* dst, const StageParams* params, int32_t* scratch, int64_t batch,
                   int64_t size, int64_t channels);

// Per-channel ToTensor + Normalize constants (1 or 3 channels).
struct NormalizeParams {
  float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
};

// out[b][c][y][x] = normalize_value(src[b][y][x][c], mean[c], std[c]): [B, S, S, C] uint8 to
// [B, C, S, S] float.
void normalize_images(const uint8_t* src, float* out, int64_t batch, int64_t size, int64_t channels,
                      const NormalizeParams& norm);

}  // namespace mcdl::cuda
