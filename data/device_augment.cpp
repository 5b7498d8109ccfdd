#include "data/device_augment.h"

#include <algorithm>
#include <cstring>

#include "data/augment_plan.h"
#include "engine/error.h"
#include "engine/profile.h"
#include "kernels/cuda/augment.h"
#include "kernels/cuda/runtime.h"

namespace mcdl {
namespace {

// ---- the host-side decisions of apply_augment (data/randaugment.cpp), per image and step ------
// The geometry comes from data/augment_plan.h, as on the CPU path; the parity test checks that
// both paths give the same bytes for every op.

cuda::StageParams affine_stage(const AffineMatrix& m, int64_t size) {
  cuda::StageParams p;
  p.op = cuda::stage_affine;
  p.affine = pixel_math::plan_affine(m.data(), size, size);
  return p;
}

cuda::StageParams blend_stage(cuda::StageOp op, double magnitude) {
  cuda::StageParams p;
  p.op = op;
  p.alpha = static_cast<float>(1.0 + magnitude);
  return p;
}

// apply_augment's op on a size × size image, as one kernel-level op.
cuda::StageParams plan_stage(const AugmentStep& step, int64_t size) {
  const double m = step.magnitude;
  cuda::StageParams p;
  switch (step.op) {
    case AugmentOp::identity:
      return p;
    case AugmentOp::shear_x:
    case AugmentOp::shear_y:
    case AugmentOp::translate_x:
    case AugmentOp::translate_y:
      return affine_stage(affine_op_matrix(step.op, m, size, size), size);
    case AugmentOp::rotate: {
      const RotatePlan plan = plan_rotate(m, size, size);
      switch (plan.kind) {
        case RotatePlan::Kind::identity:
          return p;
        case RotatePlan::Kind::quarter_turns:  // Image.transpose (the image is square)
          p.op = cuda::stage_quarter_turns;
          p.count = plan.quarter_turns;
          return p;
        case RotatePlan::Kind::affine:
          return affine_stage(plan.matrix, size);
      }
      fail("augment: unknown rotate plan");
    }
    case AugmentOp::brightness:
      return blend_stage(cuda::stage_brightness, m);
    case AugmentOp::color:
      return blend_stage(cuda::stage_color, m);
    case AugmentOp::contrast:
      return blend_stage(cuda::stage_contrast, m);
    case AugmentOp::sharpness:
      return blend_stage(cuda::stage_sharpness, m);
    case AugmentOp::posterize: {
      const int bits = static_cast<int>(m);
      check(bits >= 0 && bits <= 8, "augment: Posterize: bits must be in [0, 8], got ", m);
      p.op = cuda::stage_posterize;
      p.count = bits;
      return p;
    }
    case AugmentOp::solarize:
      p.op = cuda::stage_solarize;
      p.threshold = m;
      return p;
    case AugmentOp::auto_contrast:
      p.op = cuda::stage_auto_contrast;
      return p;
    case AugmentOp::equalize:
      p.op = cuda::stage_equalize;
      return p;
  }
  fail("augment: unknown op");
}

// The common channel count of the batch, after checking the arguments.
int64_t check_batch(const char* name, const std::vector<Image>& resized, const std::vector<ViewParams>& params,
                    int64_t image_size) {
  check(!resized.empty(), name, ": empty batch");
  check(resized.size() == params.size(), name, ": ", resized.size(), " images but ", params.size(),
        " view parameters");
  check(image_size > 0, name, ": image size must be positive, got ", image_size);
  const int64_t channels = resized.front().channels;
  check(channels == 3 || channels == 1, name, ": images have 3 or 1 channels, got ", channels);
  for (const Image& im : resized) {
    check(im.channels == channels, name, ": images with ", channels, " and ", im.channels, " channels in one batch");
    check(im.height > 0 && im.width > 0, name, ": empty image");
  }
  return channels;
}

Image cpu_view(const Image& resized, const ViewParams& params, int64_t image_size) {
  return apply_randaugment(apply_crop_flip(resized, params.crop_flip, image_size), params.steps);
}

// A batch's resized images back to back on the device, in one upload: the views of that batch
// all read them.
Tensor upload_images(const std::vector<Image>& resized, Device device) {
  const ProfileRange range(device, "upload_images");
  std::vector<cuda::HostPart> parts;
  size_t bytes = 0;
  for (const Image& im : resized) {
    parts.push_back({im.pixels.data(), im.pixels.size()});
    bytes += im.pixels.size();
  }
  Tensor uploaded = empty({static_cast<int64_t>(bytes)}, DType::u8, device);
  cuda::copy_host_parts_to_device(uploaded.ptr<uint8_t>(), parts);
  return uploaded;
}

// The device path of augment_images on the uploaded images: one upload of [crop params | stage
// params], then a crop launch and one launch per RandAugment stage, ping-ponging between two
// batch buffers.
Tensor device_views(const Tensor& images, const std::vector<Image>& resized, const std::vector<ViewParams>& params,
                    int64_t size, int64_t channels, Device device) {
  const ProfileRange range(device, "augment_images");
  const auto batch = static_cast<int64_t>(resized.size());
  size_t stages = 0;
  for (const ViewParams& v : params) stages = std::max(stages, v.steps.size());

  std::vector<cuda::CropFlipParams> crops(static_cast<size_t>(batch));
  std::vector<cuda::StageParams> stage_params(stages * static_cast<size_t>(batch));  // default: copy
  int64_t offset = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const Image& im = resized[static_cast<size_t>(b)];
    const ViewParams& v = params[static_cast<size_t>(b)];
    crops[static_cast<size_t>(b)] = {offset, im.height, im.width, v.crop_flip.top, v.crop_flip.left,
                                      v.crop_flip.flip ? 1 : 0};
    offset += static_cast<int64_t>(im.pixels.size());
    for (size_t k = 0; k < v.steps.size(); ++k)
      stage_params[k * static_cast<size_t>(batch) + static_cast<size_t>(b)] = plan_stage(v.steps[k], size);
  }
  const size_t crop_bytes = sizeof(cuda::CropFlipParams) * crops.size();
  const size_t stage_bytes = sizeof(cuda::StageParams) * stage_params.size();
  Tensor uploaded = empty({static_cast<int64_t>(crop_bytes + stage_bytes)}, DType::u8, device);
  uint8_t* base = uploaded.ptr<uint8_t>();
  cuda::copy_host_parts_to_device(base, {{crops.data(), crop_bytes}, {stage_params.data(), stage_bytes}});
  const auto* crop_params = reinterpret_cast<const cuda::CropFlipParams*>(base);
  const auto* stage_base = reinterpret_cast<const cuda::StageParams*>(base + crop_bytes);

  Tensor current = empty({batch, size, size, channels}, DType::u8, device);
  cuda::crop_flip(images.ptr<uint8_t>(), crop_params, current.ptr<uint8_t>(), batch, size, channels);
  if (stages > 0) {
    Tensor next = empty({batch, size, size, channels}, DType::u8, device);
    Tensor scratch = empty({batch, 2 * size}, DType::i32, device);
    for (size_t k = 0; k < stages; ++k) {
      cuda::augment_stage(current.ptr<uint8_t>(), next.ptr<uint8_t>(), stage_base + k * static_cast<size_t>(batch),
                          scratch.ptr<int32_t>(), batch, size, channels);
      std::swap(current, next);
    }
  }
  return current;
}

}  // namespace

ViewParams draw_view_params(RandomStream& stream, int64_t height, int64_t width, int64_t image_size,
                            bool randaugment) {
  ViewParams v;
  v.crop_flip = draw_random_crop_flip(stream, height, width, image_size);
  if (randaugment) v.steps = draw_randaugment(stream, image_size, image_size);
  return v;
}

Tensor augment_images(const std::vector<Image>& resized, const std::vector<ViewParams>& params, int64_t image_size,
                      Device device) {
  const int64_t channels = check_batch("augment_images", resized, params, image_size);
  if (device.is_cuda()) return device_views(upload_images(resized, device), resized, params, image_size, channels, device);
  const auto batch = static_cast<int64_t>(resized.size());
  Tensor out = empty({batch, image_size, image_size, channels}, DType::u8);
  for (int64_t b = 0; b < batch; ++b) {
    const Image view = cpu_view(resized[static_cast<size_t>(b)], params[static_cast<size_t>(b)], image_size);
    std::memcpy(out.data<uint8_t>() + b * static_cast<int64_t>(view.pixels.size()), view.pixels.data(),
                view.pixels.size());
  }
  return out;
}

std::vector<Tensor> augment_batch_views(const std::vector<Image>& resized,
                                        const std::vector<std::vector<ViewParams>>& views, int64_t image_size,
                                        const Normalization& norm, Device device) {
  check(!views.empty(), "augment_batch: no views asked for");
  int64_t channels = 0;
  for (const std::vector<ViewParams>& params : views) channels = check_batch("augment_batch", resized, params, image_size);
  check(static_cast<int64_t>(norm.mean.size()) == channels && static_cast<int64_t>(norm.std.size()) == channels,
        "augment_batch: ", channels, "-channel images but ", norm.mean.size(), " means and ", norm.std.size(),
        " stds");
  const auto batch = static_cast<int64_t>(resized.size());
  const int64_t plane = channels * image_size * image_size;
  std::vector<Tensor> out;
  if (device.is_cuda()) {
    const Tensor images = upload_images(resized, device);
    cuda::NormalizeParams constants;
    for (int64_t c = 0; c < channels; ++c) {
      constants.mean[c] = norm.mean[static_cast<size_t>(c)];
      constants.std[c] = norm.std[static_cast<size_t>(c)];
    }
    for (const std::vector<ViewParams>& params : views) {
      const Tensor crops = device_views(images, resized, params, image_size, channels, device);
      const ProfileRange range(device, "normalize_images");
      out.push_back(empty({batch, channels, image_size, image_size}, DType::f32, device));
      cuda::normalize_images(crops.ptr<uint8_t>(), out.back().ptr<float>(), batch, image_size, channels, constants);
    }
    return out;
  }
  for (const std::vector<ViewParams>& params : views) {
    out.push_back(empty({batch, channels, image_size, image_size}, DType::f32, device));
    for (int64_t b = 0; b < batch; ++b)
      to_tensor_normalize(cpu_view(resized[static_cast<size_t>(b)], params[static_cast<size_t>(b)], image_size), norm,
                          out.back().data<float>() + b * plane);
  }
  return out;
}

Tensor augment_batch(const std::vector<Image>& resized, const std::vector<ViewParams>& params, int64_t image_size,
                     const Normalization& norm, Device device) {
  return augment_batch_views(resized, {params}, image_size, norm, device)[0];
}

}  // namespace mcdl
