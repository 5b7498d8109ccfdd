// Position-embedding interpolation for inputs other than the pretraining size, exactly as
// DINO's VisionTransformer.interpolate_pos_encoding (vision_transformer.py):
//   - identity when the patch count equals the pretraining grid's and the image is square;
//   - otherwise the [g, g] grid of patch embeddings is resized with PyTorch's bicubic
//     F.interpolate (A = −0.75, align_corners=False, border-clamped taps, no antialiasing)
//     using scale_factor = ((H/P + 0.1)/g, (W/P + 0.1)/g) — the "+0.1 trick" of DINO issue #8;
//     the scale factor itself maps coordinates: src = (dst + 0.5)/scale − 0.5;
//   - the class embedding is kept in front.
// DINOv2's interpolate_pos_encoding is the same computation (its defaults: offset 0.1, no
// antialiasing). A frozen pos_embed is resized on the host (in double) and the result copied to
// pos_embed's device; a trainable one (with gradients enabled) goes through the graph instead:
// the resize is linear, so it is one product with the [h·w, g²] matrix of bicubic weights (the
// Kronecker product of the two 1-D resizes), run in full fp32 whatever the matmul precision.
#pragma once
#include <memory>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

// PyTorch F.interpolate(x, scale_factor=(scale_h, scale_w), mode='bicubic',
// align_corners=False) of `channels` planes [in_h, in_w] (row-major, channel-major) into
// [out_h, out_w] with out = floor(in·scale), computed in double. With float_step the step
// 1/scale is first rounded to float, as PyTorch's float32 kernel holds it: at DINOv2's 37x37 grid
// that moves float32 results by up to ~5e-6, more than float rounding; the rest of PyTorch's
// float32 arithmetic then agrees to a few float ulps.
std::vector<double> bicubic_resize(const std::vector<double>& planes, int64_t channels, int64_t in_h, int64_t in_w,
                                   double scale_h, double scale_w, int64_t& out_h, int64_t& out_w,
                                   bool float_step = false);

// The 1-D bicubic resize of bicubic_resize as a dense [out_size, in_size] matrix (clamped taps
// that land on one source index add up).
std::vector<double> bicubic_matrix(int64_t in_size, int64_t out_size, double scale_factor, bool float_step);

// pos_embed [1, 1 + g², D] for an image of image_h × image_w pixels cut into patch × patch
// patches → [1, 1 + (image_h/patch)·(image_w/patch), D] (float_step unless pos_embed is f64);
// returns pos_embed itself when no interpolation is needed.
Tensor interpolate_pos_encoding(const Tensor& pos_embed, int64_t image_h, int64_t image_w, int64_t patch);

// interpolate_pos_encoding with the last frozen result kept: DINOv2 models resize their 37x37
// table at 224 px on every forward, which on a CUDA device is a copy to the host and back each
// step. The kept table is used again while pos_embed is the same storage, not written since
// (Storage::writes: a load, an initialisation, an optimizer step), and the image size is the
// same; a trainable pos_embed (with gradients enabled) is resized in the graph every time.
class PosEmbedResizer {
 public:
  Tensor operator()(const Tensor& pos_embed, int64_t image_h, int64_t image_w, int64_t patch);

 private:
  std::weak_ptr<Storage> storage_;  // pos_embed's, not kept alive here
  int64_t offset_ = 0, image_h_ = 0, image_w_ = 0, patch_ = 0;
  Shape shape_;
  uint64_t writes_ = 0;
  Tensor resized_;
};

}  // namespace mcdl
