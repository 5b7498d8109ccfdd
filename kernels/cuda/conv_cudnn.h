// The patch-embedding convolution's forward through cuDNN's graph (backend) API (its bias:
// add_channel_bias, linalg.h). Plain C++: engine code includes it.
#pragma once
#include <cstdint>

#include "kernels/cuda/gemm.h"
#include "kernels/patch_grid.h"

namespace mcdl::cuda {

// y [B, O, H/P, W/P] = the cross-correlation of x [B, C, H, W] with w [O, C, P, P] at stride P
// without padding (no bias; y is only written), queued on the engine stream. The execution plan
// is built once per shape (heuristics, then the first engine config that finalizes) and cached.
// Float data: GemmMode::fp32 keeps to engines without tensor cores (TF32), GemmMode::tf32 and
// bf16 allow TF32 ones (the float data is not down-converted to bf16 here); engines that down-convert inputs or are non-deterministic are never used. Returns false,
// having done nothing, when no engine config of cuDNN finalizes for the shape (the caller falls
// back to im2col + GEMM); any other cuDNN failure throws.
bool conv2d_patch_cudnn(const float* x, const float* w, float* y, const PatchGrid& grid, int64_t out_channels,
                        GemmMode mode);
bool conv2d_patch_cudnn(const double* x, const double* w, double* y, const PatchGrid& grid, int64_t out_channels,
                        GemmMode mode);

}  // namespace mcdl::cuda
