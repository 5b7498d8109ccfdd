// Map bodies (elementwise_launch.h) shared by the element-wise kernels: a unary op's forward,
// and the gradient body dst (=|+=) partial(g, a, b) of unary and binary ops. Vectorised: 16-byte
// packs, several in flight per thread; the per-element formulas are unchanged, so results are
// the same bits as element by element. Included by .cu files only.
#pragma once
#include <cstdint>

#include "kernels/cuda/elementwise_launch.h"

namespace mcdl::cuda {

// A unary Op has
//   static constexpr bool uses_input, uses_output;   (whether backward reads x, y)
//   template <class T> T forward(T x) const;  template <class T> T backward(T g, T x, T y) const;
template <class T, class Op>
struct UnaryForward {
  using value_type = T;
  static constexpr int loads = 1;
  const T* x;
  T* y;
  Op op;
  template <int P>
  __device__ void load(int64_t i, Pack<T, P>* in) const {
    in[0] = load_pack<P>(x + i);
  }
  template <int P>
  __device__ void store(int64_t i, const Pack<T, P>* in) const {
    Pack<T, P> out;
    MCDL_UNROLL
    for (int k = 0; k < P; ++k) out.v[k] = op.forward(in[0].v[k]);
    store_pack<P>(y + i, out);
  }
};

// b read at the output's index (same shape).
struct SameIndex {
  __device__ __forceinline__ int64_t operator()(int64_t i) const { return i; }
};

// dst (=|+=) partial(g, a, b) for a gradient of the output's size. Streams: g, a (if
// Partial::uses_a), b at b_index(i) (if Partial::uses_b), dst (when accumulating); a and b may
// be null where unused. With packs, b_index must map a pack to consecutive elements.
template <class T, class Partial, class BIndex = SameIndex>
struct GradMap {
  using value_type = T;
  static constexpr int loads = 4;
  const T *g, *a, *b;
  T* dst;
  bool overwrite;
  Partial partial;
  BIndex b_index{};
  template <int P>
  __device__ void load(int64_t i, Pack<T, P>* in) const {
    in[0] = load_pack<P>(g + i);
    if constexpr (Partial::uses_a) in[1] = load_pack<P>(a + i);
    if constexpr (Partial::uses_b) in[2] = load_pack<P>(b + b_index(i));
    if (!overwrite) in[3] = load_pack<P>(dst + i);
  }
  template <int P>
  __device__ void store(int64_t i, const Pack<T, P>* in) const {
    Pack<T, P> out;
    MCDL_UNROLL
    for (int k = 0; k < P; ++k) {
      const T value = partial(in[0].v[k], in[1].v[k], in[2].v[k]);
      out.v[k] = overwrite ? value : in[3].v[k] + value;
    }
    store_pack<P>(dst + i, out);
  }
};

// A unary op's backward as a GradMap partial: a = x, b = y.
template <class Op>
struct UnaryPartial {
  static constexpr bool uses_a = Op::uses_input, uses_b = Op::uses_output;
  Op op;
  template <class T>
  __device__ __forceinline__ T operator()(T g, T x, T y) const {
    return op.backward(g, x, y);
  }
};

template <class T, class Op>
void unary_map_forward(Op op, const T* x, T* y, int64_t n) {
  launch_map(UnaryForward<T, Op>{x, y, op}, n, packs_aligned(x, y));
}

// dx (=|+=) op.backward(g, x, y); x and y are read only where the op uses them.
template <class T, class Op>
void unary_map_backward(Op op, const T* g, const T* x, const T* y, T* dx, int64_t n, bool overwrite) {
  const T* xs = Op::uses_input ? x : nullptr;
  const T* ys = Op::uses_output ? y : nullptr;
  launch_map(GradMap<T, UnaryPartial<Op>>{g, xs, ys, dx, overwrite, {op}}, n, packs_aligned(g, xs, ys, dx));
}

}  // namespace mcdl::cuda
