// Fill, dtype conversion and gradient accumulation on device buffers (the CUDA twins of
// kernels/cpu/copy.h). Launches are queued on the engine stream.
#pragma once
#include <cstdint>

namespace mcdl::cuda {

template <class T>
void fill(T* dst, T value, int64_t n);
template <class Src, class Dst>
void convert(const Src* src, Dst* dst, int64_t n);
// dst = src when overwrite, else dst += src.
template <class T>
void accumulate(T* dst, const T* src, int64_t n, bool overwrite);

}  // namespace mcdl::cuda
