#include "kernels/cuda/copy.h"

#include "kernels/bf16.h"
#include "kernels/cuda/elementwise_launch.h"

namespace mcdl::cuda {
namespace {

template <class T>
__global__ void fill_kernel(T* dst, T value, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) dst[i] = value;
}

template <class Src, class Dst>
__device__ __forceinline__ Dst convert_value(Src value) {
  return from_double_value<Dst>(to_double_value(value));
}
// float -> bf16 rounds once, as the CPU kernel does.
template <>
__device__ __forceinline__ bf16 convert_value<float, bf16>(float value) {
  return bf16(value);
}

template <class Src, class Dst>
__global__ void convert_kernel(const Src* src, Dst* dst, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) dst[i] = convert_value<Src, Dst>(src[i]);
}

template <class T>
__global__ void accumulate_kernel(T* dst, const T* src, int64_t n, bool overwrite) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) dst[i] = overwrite ? src[i] : dst[i] + src[i];
}

}  // namespace

template <class T>
void fill(T* dst, T value, int64_t n) {
  if (n > 0) launch(fill_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), dst, value, n);
}

template <class Src, class Dst>
void convert(const Src* src, Dst* dst, int64_t n) {
  if (n > 0)
    launch(convert_kernel<Src, Dst>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), src, dst, n);
}

template <class T>
void accumulate(T* dst, const T* src, int64_t n, bool overwrite) {
  if (n > 0)
    launch(accumulate_kernel<T>, elementwise_grid(n), dim3(elementwise_block()), 0, engine_stream(), dst, src, n,
           overwrite);
}

// Every (source, destination) dtype pair; two list macros because a macro cannot expand itself.
#define MCDL_DST_TYPES(X, Src) \
  X(Src, float) X(Src, double) X(Src, bf16) X(Src, int32_t) X(Src, int64_t) X(Src, uint8_t)
#define MCDL_SRC_TYPES(X) X(float) X(double) X(bf16) X(int32_t) X(int64_t) X(uint8_t)
#define MCDL_INSTANTIATE_CONVERT(Src, Dst) template void convert<Src, Dst>(const Src*, Dst*, int64_t);
#define MCDL_INSTANTIATE_FROM(Src) MCDL_DST_TYPES(MCDL_INSTANTIATE_CONVERT, Src)
#define MCDL_INSTANTIATE_FILL(T) template void fill<T>(T*, T, int64_t);
MCDL_SRC_TYPES(MCDL_INSTANTIATE_FROM)
MCDL_SRC_TYPES(MCDL_INSTANTIATE_FILL)
template void accumulate<float>(float*, const float*, int64_t, bool);
template void accumulate<double>(double*, const double*, int64_t, bool);

}  // namespace mcdl::cuda
