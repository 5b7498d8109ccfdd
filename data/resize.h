// Pillow-exact bicubic resampling (Pillow 9.4 `Image.resize(size, Image.BICUBIC)`, the filter
// torchvision's Resize(..., interpolation=BICUBIC) calls on PIL images) and torchvision's
// Resize(int) output-size rule. Bit-identical to Pillow: see data/resize.cpp for the algorithm.
#pragma once
#include <cstddef>  // size_t, which data/image.h uses without including
#include <cstdint>

#include "data/image.h"

namespace mcdl {

// The image resampled to out_width × out_height with Pillow's antialiased bicubic filter.
// Returns a copy when the size is unchanged (as Pillow does).
Image resize_bicubic(const Image& image, int64_t out_width, int64_t out_height);

// torchvision 0.14 Resize(size) with an int: the shorter side becomes `size`, the longer side
// int(size · long / short) (truncated); ties (a square) count as "width is the shorter side".
struct ImageSize {
  int64_t height = 0, width = 0;
  bool operator==(const ImageSize&) const = default;
};
ImageSize shorter_side_output_size(int64_t height, int64_t width, int64_t size);

// resize_bicubic to shorter_side_output_size (unchanged when the size already matches).
Image resize_shorter_side(const Image& image, int64_t size);

}  // namespace mcdl
