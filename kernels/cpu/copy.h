// Copy, conversion, fill and gradient accumulation on raw host buffers.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/bf16.h"
#include "kernels/cpu/bf16_lanes.h"
#include "kernels/cpu/parallel.h"

namespace mcdl::cpu {

template <class Src, class Dst>
void convert(const Src* src, Dst* dst, int64_t n) {
  parallel_for(n, [&](int64_t i) { dst[i] = from_double_value<Dst>(to_double_value(src[i])); });
}
// float -> bf16 directly, so a value rounds once (not through double then float); both directions
// sixteen elements at a time (bf16_lanes.h), in blocks over the threads.
inline void convert(const float* src, bf16* dst, int64_t n) {
  parallel_blocks(n, 4096, [&](int64_t begin, int64_t count) { round_to_bf16(src + begin, dst + begin, count); });
}
inline void convert(const bf16* src, float* dst, int64_t n) {
  parallel_blocks(n, 4096, [&](int64_t begin, int64_t count) { widen_bf16(src + begin, dst + begin, count); });
}

// `bytes` bytes from src to dst within host memory (the twin of cuda::copy_device_to_device).
inline void copy_device_to_device(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

template <class T>
void fill(T* dst, T value, int64_t n) {
  parallel_for(n, [&](int64_t i) { dst[i] = value; });
}

// dst = src when overwrite, else dst += src.
template <class T>
void accumulate(T* dst, const T* src, int64_t n, bool overwrite) {
  if (overwrite) {
    parallel_for(n, [&](int64_t i) { dst[i] = src[i]; });
  } else {
    parallel_for(n, [&](int64_t i) { dst[i] += src[i]; });
  }
}

}  // namespace mcdl::cpu
