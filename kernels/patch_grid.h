// The geometry of a patch convolution (kernel = stride = P, no padding), shared by the CPU
// and CUDA kernels: x [B, C, H, W] cut into a grid of H/P × W/P patches per image.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"

namespace mcdl {

struct PatchGrid {
  int64_t batch, channels, height, width, patch;
  MCDL_HOST_DEVICE int64_t rows() const { return height / patch; }
  MCDL_HOST_DEVICE int64_t cols() const { return width / patch; }
  MCDL_HOST_DEVICE int64_t patches() const { return rows() * cols(); }              // L, per image
  MCDL_HOST_DEVICE int64_t patch_size() const { return channels * patch * patch; }  // K, one patch flattened
};

}  // namespace mcdl
