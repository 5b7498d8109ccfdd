// The train and strong views of a batch built on the device: crop + flip, RandAugment and
// ToTensor + Normalize as CUDA kernels over the whole batch (kernels/cuda/augment.h), with the
// random parameters drawn on the host by the CPU path's draw functions. The result is bit for bit
// the CPU loader's (make_view, then to_tensor_normalize), on either device, so callers can switch.
#pragma once
#include <cstddef>  // size_t, which data/image.h uses without including
#include <cstdint>
#include <vector>

#include "data/image.h"
#include "data/randaugment.h"
#include "data/transforms.h"
#include "engine/random.h"
#include "engine/tensor.h"

namespace mcdl {

// One view's random parameters: the crop and flip of the resized image, then the RandAugment
// steps on the S × S crop (none for a plain train view).
struct ViewParams {
  CropFlip crop_flip;
  std::vector<AugmentStep> steps;
};

// make_view's draws for a train view (randaugment = false) or a strong view, in its stream
// order: draw_random_crop_flip, then draw_randaugment(S, S) with RandAugment(2, 9, 31).
ViewParams draw_view_params(RandomStream& stream, int64_t height, int64_t width, int64_t image_size,
                            bool randaugment);

// The views as uint8 [B, S, S, C] (HWC images) on `device`: image b cropped and flipped by
// params[b].crop_flip (zero outside the image, as PIL crop), then params[b].steps applied in
// order. The images share one channel count (3 or 1) and may differ in size. On a CUDA device the
// packed images go up in one host-to-device copy, and the parameters in another.
Tensor augment_images(const std::vector<Image>& resized, const std::vector<ViewParams>& params, int64_t image_size,
                      Device device);

// The views normalised: f32 [B, C, S, S] on `device`, out[b] = to_tensor_normalize(view b).
Tensor augment_batch(const std::vector<Image>& resized, const std::vector<ViewParams>& params, int64_t image_size,
                     const Normalization& norm, Device device);
// Several views of one batch (views[v][b]: view v's parameters for image b), each as
// augment_batch's; on a CUDA device the images go up once for all of them.
std::vector<Tensor> augment_batch_views(const std::vector<Image>& resized,
                                        const std::vector<std::vector<ViewParams>>& views, int64_t image_size,
                                        const Normalization& norm, Device device);

}  // namespace mcdl
