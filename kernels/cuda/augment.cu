#include "kernels/cuda/augment.h"

#include <algorithm>

#include "kernels/cuda/elementwise_launch.h"

namespace mcdl::cuda {
namespace {

using namespace pixel_math;

// Blocks per image of the element-wise kernels (crop, normalise): enough to fill a GPU with a
// few images, few enough that a large batch does not launch needless blocks.
constexpr unsigned max_blocks_per_image = 32;

dim3 per_image_grid(int64_t batch, int64_t elements_per_image, unsigned block) {
  return dim3(static_cast<unsigned>(batch), std::min(blocks_for(elements_per_image, block), max_blocks_per_image));
}

// blockIdx.x: the image; blockIdx.y: the block's share of it.
__device__ __forceinline__ int64_t image_index() { return static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t image_stride() { return static_cast<int64_t>(gridDim.y) * blockDim.x; }

__global__ void crop_flip_kernel(const uint8_t* packed, const CropFlipParams* params, uint8_t* out, int64_t size,
                                 int64_t channels) {
  const CropFlipParams p = params[blockIdx.x];
  const int64_t bytes = size * size * channels;
  const uint8_t* src = packed + p.offset;
  uint8_t* dst = out + static_cast<int64_t>(blockIdx.x) * bytes;
  for (int64_t i = image_index(); i < bytes; i += image_stride()) {
    const int64_t c = i % channels, pixel = i / channels, y = pixel / size, x = pixel % size;
    const int64_t sy = p.top + y, sx = p.left + (p.flip ? size - 1 - x : x);
    dst[i] = sy >= 0 && sy < p.height && sx >= 0 && sx < p.width ? src[(sy * p.width + sx) * channels + c] : 0;
  }
}

__global__ void normalize_kernel(const uint8_t* src, float* out, int64_t size, int64_t channels, NormalizeParams norm) {
  const int64_t pixels = size * size, count = pixels * channels, b = blockIdx.x;
  const uint8_t* in = src + b * count;
  float* dst = out + b * count;
  for (int64_t i = image_index(); i < count; i += image_stride()) {
    const int64_t c = i / pixels, pixel = i % pixels;
    const float mean = c == 0 ? norm.mean[0] : c == 1 ? norm.mean[1] : norm.mean[2];
    const float std = c == 0 ? norm.std[0] : c == 1 ? norm.std[1] : norm.std[2];
    dst[i] = normalize_value(in[pixel * channels + c], mean, std);
  }
}

// ---- the RandAugment stage: one block per image ------------------------------------------------

// The per-image state of a stage: the image's bytes in and out, its geometry.
struct ImageView {
  const uint8_t* in;
  uint8_t* out;
  int64_t size, channels, pixels, bytes;
};

__device__ void affine_image(const ImageView& im, const AffinePlan& p, int32_t* scratch) {
  const int64_t s = im.size, c = im.channels;
  if (p.path == affine_float) {
    // Positions stepped by adds along each row: one thread per row keeps Pillow's order.
    for (int64_t y = threadIdx.x; y < s; y += blockDim.x) {
      uint8_t* row = im.out + y * s * c;
      for (int64_t i = 0; i < s * c; ++i) row[i] = 0;
      double xx, yy;
      float_row_start(p, y, xx, yy);
      float_affine_row(im.in, row, s, s, c, p, xx, yy);
    }
    return;
  }
  int32_t* source_x = scratch;
  int32_t* source_y = scratch + s;
  if (p.path == affine_scale) {
    // Each axis's positions are stepped sequentially: one thread per table, then all pixels.
    if (threadIdx.x == 0) scale_sources(p.x0, p.m0, s, source_x);
    if (threadIdx.x == blockDim.x - 1) scale_sources(p.y0, p.m4, s, source_y);
    __syncthreads();
  }
  for (int64_t i = threadIdx.x; i < im.pixels; i += blockDim.x) {
    const int64_t y = i / s, x = i % s;
    int64_t sx = 0, sy = 0;
    bool inside;
    if (p.path == affine_scale) {
      sx = source_x[x], sy = source_y[y];
      inside = sx >= 0 && sy >= 0;
    } else {
      inside = fixed_source(p, x, y, s, s, sx, sy);
    }
    for (int64_t k = 0; k < c; ++k) im.out[i * c + k] = inside ? im.in[(sy * s + sx) * c + k] : 0;
  }
}

__device__ void quarter_turns_image(const ImageView& im, int turns) {
  for (int64_t i = threadIdx.x; i < im.pixels; i += blockDim.x) {
    int64_t sx, sy;
    quarter_turn_source(i % im.size, i / im.size, im.size, im.size, turns, sx, sy);
    copy_pixel(im.in + (sy * im.size + sx) * im.channels, im.out + i * im.channels, im.channels);
  }
}

// ImageEnhance's blends: degenerate(i) gives the degenerate image's byte i.
template <class Degenerate>
__device__ void blend_image(const ImageView& im, float alpha, Degenerate degenerate) {
  for (int64_t i = threadIdx.x; i < im.bytes; i += blockDim.x) im.out[i] = blend_value(degenerate(i), im.in[i], alpha);
}

// Σ L over the image: per-thread partial sums meet in one shared integer (exact in any order).
__device__ int64_t luma_sum(const ImageView& im, unsigned long long* total) {
  if (threadIdx.x == 0) *total = 0;
  __syncthreads();
  unsigned long long partial = 0;
  for (int64_t i = threadIdx.x; i < im.pixels; i += blockDim.x)
    partial += luma_of(im.in + i * im.channels, im.channels);
  atomicAdd(total, partial);
  __syncthreads();
  return static_cast<int64_t>(*total);
}

// Per-channel tables from per-channel histograms (integer counts: the same in any order).
template <class LutOfHistogram>
__device__ void histogram_image(const ImageView& im, unsigned* hist, uint8_t* luts, LutOfHistogram lut_of) {
  const int64_t c = im.channels;
  for (int64_t k = threadIdx.x; k < 256 * c; k += blockDim.x) hist[k] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < im.bytes; i += blockDim.x) atomicAdd(&hist[(i % c) * 256 + im.in[i]], 1u);
  __syncthreads();
  if (threadIdx.x < c) lut_of(hist + 256 * threadIdx.x, luts + 256 * threadIdx.x);
  __syncthreads();
  for (int64_t i = threadIdx.x; i < im.bytes; i += blockDim.x) im.out[i] = luts[(i % c) * 256 + im.in[i]];
}

struct AutocontrastLut {
  __device__ void operator()(const unsigned* hist, uint8_t* lut) const { autocontrast_lut(hist, lut); }
};
struct EqualizeLut {
  __device__ void operator()(const unsigned* hist, uint8_t* lut) const { equalize_lut(hist, lut); }
};

// The op is the same for all threads of a block, so the barriers inside are reached by all.
__global__ void augment_stage_kernel(const uint8_t* src, uint8_t* dst, const StageParams* params, int32_t* scratch,
                                     int64_t size, int64_t channels) {
  __shared__ unsigned hist[3 * 256];
  __shared__ uint8_t luts[3 * 256];
  __shared__ unsigned long long total;
  const int64_t b = blockIdx.x, pixels = size * size, bytes = pixels * channels;
  const StageParams& p = params[b];
  const ImageView im{src + b * bytes, dst + b * bytes, size, channels, pixels, bytes};
  const uint8_t* in = im.in;
  switch (p.op) {
    case stage_affine:
      affine_image(im, p.affine, scratch + b * 2 * size);
      break;
    case stage_quarter_turns:
      quarter_turns_image(im, p.count);
      break;
    case stage_brightness:
      blend_image(im, p.alpha, [](int64_t) { return 0; });
      break;
    case stage_color:
      blend_image(im, p.alpha, [in, channels](int64_t i) {
        return channels == 3 ? luma_of(in + i / 3 * 3, 3) : static_cast<int>(in[i]);
      });
      break;
    case stage_contrast: {
      const int grey = grey_level(luma_sum(im, &total), pixels);
      blend_image(im, p.alpha, [grey](int64_t) { return grey; });
      break;
    }
    case stage_sharpness:
      blend_image(im, p.alpha, [in, size, channels](int64_t i) {
        const int64_t pixel = i / channels, y = pixel / size, x = pixel % size;
        return smooth_copies(x, y, size, size) ? static_cast<int>(in[i])
                                               : static_cast<int>(smooth_value(in + i, size * channels, channels));
      });
      break;
    case stage_posterize:
      for (int64_t i = threadIdx.x; i < bytes; i += blockDim.x) im.out[i] = posterize_value(in[i], p.count);
      break;
    case stage_solarize:
      for (int64_t i = threadIdx.x; i < bytes; i += blockDim.x) im.out[i] = solarize_value(in[i], p.threshold);
      break;
    case stage_auto_contrast:
      histogram_image(im, hist, luts, AutocontrastLut{});
      break;
    case stage_equalize:
      histogram_image(im, hist, luts, EqualizeLut{});
      break;
    default:  // stage_copy
      for (int64_t i = threadIdx.x; i < bytes; i += blockDim.x) im.out[i] = in[i];
      break;
  }
}

}  // namespace

void crop_flip(const uint8_t* packed, const CropFlipParams* params, uint8_t* out, int64_t batch, int64_t size,
               int64_t channels) {
  if (batch <= 0) return;
  const unsigned block = block_size(256);
  launch(crop_flip_kernel, per_image_grid(batch, size * size * channels, block), dim3(block), 0, engine_stream(),
         packed, params, out, size, channels);
}

void augment_stage(const uint8_t* src, uint8_t* dst, const StageParams* params, int32_t* scratch, int64_t batch,
                   int64_t size, int64_t channels) {
  if (batch <= 0) return;
  launch(augment_stage_kernel, dim3(static_cast<unsigned>(batch)), dim3(block_size(256)), 0, engine_stream(), src,
         dst, params, scratch, size, channels);
}

void normalize_images(const uint8_t* src, float* out, int64_t batch, int64_t size, int64_t channels,
                      const NormalizeParams& norm) {
  if (batch <= 0) return;
  const unsigned block = block_size(256);
  launch(normalize_kernel, per_image_grid(batch, size * size * channels, block), dim3(block), 0, engine_stream(), src,
         out, size, channels, norm);
}

}  // namespace mcdl::cuda
