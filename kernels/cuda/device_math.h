// float/double overloads of the math the kernels use: float math for float data (as
// std::exp(float) on the CPU), double math for double. Included by .cu files only.
#pragma once
#include <cmath>

#include "kernels/cuda/cuda_common.h"

namespace mcdl::cuda {

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }
__device__ __forceinline__ float log_of(float x) { return logf(x); }
__device__ __forceinline__ double log_of(double x) { return log(x); }
__device__ __forceinline__ float sqrt_of(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_of(double x) { return sqrt(x); }
__device__ __forceinline__ float pow_of(float x, float p) { return powf(x, p); }
__device__ __forceinline__ double pow_of(double x, double p) { return pow(x, p); }
__device__ __forceinline__ float erf_of(float x) { return erff(x); }
__device__ __forceinline__ double erf_of(double x) { return erf(x); }

// The larger of a and b, a NaN operand losing (as std::max(top, x) in the CPU kernels, which
// starts from -inf); commutative, so every lane of a butterfly gets the same value.
__device__ __forceinline__ float fmax_of(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double fmax_of(double a, double b) { return fmax(a, b); }

// The larger of a and b as std::max(a, b) picks it (a NaN in b is ignored, as in the CPU kernels).
template <class T>
__device__ __forceinline__ T max_of(T a, T b) {
  return a < b ? b : a;
}

}  // namespace mcdl::cuda
