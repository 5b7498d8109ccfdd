#include "kernels/cuda/elementwise.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/device_math.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/map_bodies.h"

namespace mcdl::cuda {
namespace {

// ---- unary ops: the formulas of kernels/cpu/elementwise.h, forward(x) and backward(g, x, y) ----

struct Neg {
  static constexpr bool uses_input = false, uses_output = false;
  template <class T> __device__ T forward(T x) const { return -x; }
  template <class T> __device__ T backward(T g, T, T) const { return -g; }
};
struct Exp {
  static constexpr bool uses_input = false, uses_output = true;
  template <class T> __device__ T forward(T x) const { return exp_of(x); }
  template <class T> __device__ T backward(T g, T, T y) const { return g * y; }
};
struct Log {
  static constexpr bool uses_input = true, uses_output = false;
  template <class T> __device__ T forward(T x) const { return log_of(x); }
  template <class T> __device__ T backward(T g, T x, T) const { return g / x; }
};
struct Sqrt {
  static constexpr bool uses_input = false, uses_output = true;
  template <class T> __device__ T forward(T x) const { return sqrt_of(x); }
  template <class T> __device__ T backward(T g, T, T y) const { return g / (T(2) * y); }
};
struct PowScalar {
  static constexpr bool uses_input = true, uses_output = false;
  double exponent;
  template <class T> __device__ T forward(T x) const { return pow_of(x, static_cast<T>(exponent)); }
  // PyTorch's pow_backward: exactly zero for exponent 0.
  template <class T> __device__ T backward(T g, T x, T) const {
    if (exponent == 0.0) return T(0);
    const T p = static_cast<T>(exponent);
    return g * p * pow_of(x, p - T(1));
  }
};
struct AddScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> __device__ T forward(T x) const { return x + static_cast<T>(s); }
  template <class T> __device__ T backward(T g, T, T) const { return g; }
};
struct SubScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> __device__ T forward(T x) const { return x - static_cast<T>(s); }
  template <class T> __device__ T backward(T g, T, T) const { return g; }
};
struct RSubScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> __device__ T forward(T x) const { return static_cast<T>(s) - x; }
  template <class T> __device__ T backward(T g, T, T) const { return -g; }
};
struct MulScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> __device__ T forward(T x) const { return x * static_cast<T>(s); }
  template <class T> __device__ T backward(T g, T, T) const { return g * static_cast<T>(s); }
};
struct DivScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> __device__ T forward(T x) const { return x / static_cast<T>(s); }
  template <class T> __device__ T backward(T g, T, T) const { return g / static_cast<T>(s); }
};
struct RDivScalar {
  static constexpr bool uses_input = true, uses_output = true;
  double s;
  template <class T> __device__ T forward(T x) const { return static_cast<T>(s) / x; }
  template <class T> __device__ T backward(T g, T x, T y) const { return -g * y / x; }
};

// Calls f with the device op of fn.
template <class F>
void with_unary_op(UnaryFn fn, F&& f) {
  switch (fn.op) {
    case UnaryOp::neg: return f(Neg{});
    case UnaryOp::exp: return f(Exp{});
    case UnaryOp::log: return f(Log{});
    case UnaryOp::sqrt: return f(Sqrt{});
    case UnaryOp::pow: return f(PowScalar{fn.scalar});
    case UnaryOp::add_scalar: return f(AddScalar{fn.scalar});
    case UnaryOp::sub_scalar: return f(SubScalar{fn.scalar});
    case UnaryOp::rsub_scalar: return f(RSubScalar{fn.scalar});
    case UnaryOp::mul_scalar: return f(MulScalar{fn.scalar});
    case UnaryOp::div_scalar: return f(DivScalar{fn.scalar});
    case UnaryOp::rdiv_scalar: return f(RDivScalar{fn.scalar});
  }
}

// ---- binary ops: forward(x, y), grad_x(g, x, y), grad_y(g, x, y) ----------------------------

struct Add {
  static constexpr bool uses_inputs = false;
  template <class T> __device__ static T forward(T x, T y) { return x + y; }
  template <class T> __device__ static T grad_x(T g, T, T) { return g; }
  template <class T> __device__ static T grad_y(T g, T, T) { return g; }
};
struct Sub {
  static constexpr bool uses_inputs = false;
  template <class T> __device__ static T forward(T x, T y) { return x - y; }
  template <class T> __device__ static T grad_x(T g, T, T) { return g; }
  template <class T> __device__ static T grad_y(T g, T, T) { return -g; }
};
struct Mul {
  static constexpr bool uses_inputs = true;
  template <class T> __device__ static T forward(T x, T y) { return x * y; }
  template <class T> __device__ static T grad_x(T g, T, T y) { return g * y; }
  template <class T> __device__ static T grad_y(T g, T x, T) { return g * x; }
};
struct Div {
  static constexpr bool uses_inputs = true;
  template <class T> __device__ static T forward(T x, T y) { return x / y; }
  template <class T> __device__ static T grad_x(T g, T, T y) { return g / y; }
  template <class T> __device__ static T grad_y(T g, T x, T y) { return -g * x / (y * y); }
};

template <class F>
void with_binary_op(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::add: return f(Add{});
    case BinaryOp::sub: return f(Sub{});
    case BinaryOp::mul: return f(Mul{});
    case BinaryOp::div: return f(Div{});
  }
}

// Calls f with the binary op and the operand as types (a std::integral_constant for the side).
template <class F>
void with_binary_grad(BinaryOp op, Operand side, F&& f) {
  with_binary_op(op, [&](auto binary) {
    if (side == Operand::x) {
      f(binary, std::integral_constant<Operand, Operand::x>{});
    } else {
      f(binary, std::integral_constant<Operand, Operand::y>{});
    }
  });
}

// p[i] when the formula reads it, else a dummy (the pointer may then be null).
template <bool used, class T>
__device__ __forceinline__ T load(const T* p, int64_t i) {
  if constexpr (used) {
    return p[i];
  } else {
    return T(0);
  }
}

template <Operand side, class Op, class T>
__device__ __forceinline__ T partial(T g, T x, T y) {
  if constexpr (side == Operand::x) {
    return Op::grad_x(g, x, y);
  } else {
    return Op::grad_y(g, x, y);
  }
}

// The partial derivative for one operand as a GradMap partial (map_bodies.h).
template <Operand side, class Op>
struct BinaryPartial {
  static constexpr bool uses_a = Op::uses_inputs, uses_b = Op::uses_inputs;
  template <class T>
  __device__ __forceinline__ T operator()(T g, T a, T b) const {
    return partial<side, Op>(g, a, b);
  }
};

// A sum computed in double, written as the CPU's detail::write_sum does.
template <class T>
__device__ __forceinline__ void write_sum(T* dst, double s, bool overwrite) {
  *dst = overwrite ? static_cast<T>(s) : static_cast<T>(*dst + s);
}

// ---- same-shape / row-broadcast kernels (map bodies, elementwise_launch.h) ---------------------
// Vectorised as those of map_bodies.h. b is read at b_index(i): i (same shape) or the column of
// i (b [cols] repeated over rows; packs never straddle rows because the launcher vectorises only
// when cols % W == 0).

// The column of flat index i in rows of `cols`: a 32-bit division when every index fits (a
// fraction of the instructions of the 64-bit one, which the GPU does in software).
struct ColumnOf {
  int64_t cols;
  bool narrow;  // all indices < 2^32
  __device__ __forceinline__ int64_t operator()(int64_t i) const {
    return narrow ? static_cast<int64_t>(static_cast<uint32_t>(i) % static_cast<uint32_t>(cols)) : i % cols;
  }
};

ColumnOf column_of(int64_t n, int64_t cols) { return {cols, n <= int64_t{0xffffffff}}; }

template <class Op, class T, class BIndex = SameIndex>
struct BinaryForward {
  using value_type = T;
  static constexpr int loads = 2;
  const T *a, *b;
  T* out;
  BIndex b_index{};
  template <int P>
  __device__ void load(int64_t i, Pack<T, P>* in) const {
    in[0] = load_pack<P>(a + i);
    in[1] = load_pack<P>(b + b_index(i));
  }
  template <int P>
  __device__ void store(int64_t i, const Pack<T, P>* in) const {
    Pack<T, P> result;
    MCDL_UNROLL
    for (int k = 0; k < P; ++k) result.v[k] = Op::forward(in[0].v[k], in[1].v[k]);
    store_pack<P>(out + i, result);
  }
};

// Whether rows of `cols` hold whole packs, so that no pack of the rows layout straddles two rows
// (the layout then goes in packs when the pointers are aligned too).
template <class T>
bool whole_packs_per_row(int64_t cols) {
  return cols % pack_width<T> == 0;
}

// out = op(a, b) over n elements, b read at b_index; in packs when `packable` and the pointers
// are aligned.
template <class T, class BIndex>
void launch_binary(BinaryOp op, const T* a, const T* b, T* out, int64_t n, BIndex b_index, bool packable) {
  with_binary_op(op, [&](auto binary) {
    launch_map(BinaryForward<decltype(binary), T, BIndex>{a, b, out, b_index}, n,
               packable && packs_aligned(a, b, out));
  });
}

// dst (=|+=) the partial derivative for `side` over n elements of the output's size, b read at
// b_index; in packs when `packable` and the pointers are aligned.
template <class T, class BIndex>
void launch_binary_grad(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t n,
                        bool overwrite, BIndex b_index, bool packable) {
  with_binary_grad(op, side, [&](auto binary, auto which) {
    using Op = decltype(binary);
    const T* as = Op::uses_inputs ? a : nullptr;
    const T* bs = Op::uses_inputs ? b : nullptr;
    launch_map(GradMap<T, BinaryPartial<decltype(which)::value, Op>, BIndex>{g, as, bs, dst, overwrite, {}, b_index},
               n, packable && packs_aligned(g, as, bs, dst));
  });
}

// ---- general broadcasting ---------------------------------------------------------------------

// Sizes and element strides of some output dimensions, row-major, passed to kernels by value.
// Strides: of the output gradient g (contiguous) and of the operands a and b (0 where broadcast).
struct Dims {
  int count = 0;
  int64_t size[max_broadcast_rank], g[max_broadcast_rank], a[max_broadcast_rank], b[max_broadcast_rank];
};
struct Offsets {
  int64_t g = 0, a = 0, b = 0;
};

// The offsets of row-major position `index` over `dims`, added to `base`.
__device__ __forceinline__ Offsets offsets_at(const Dims& dims, int64_t index, Offsets base) {
  for (int d = dims.count - 1; d >= 0; --d) {
    const int64_t coord = index % dims.size[d];
    index /= dims.size[d];
    base.g += coord * dims.g[d];
    base.a += coord * dims.a[d];
    base.b += coord * dims.b[d];
  }
  return base;
}

template <class Op, class T>
__global__ void binary_strided_kernel(const T* a, const T* b, T* out, int64_t n, Dims dims) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const Offsets off = offsets_at(dims, i, Offsets{});
    out[i] = Op::forward(a[off.a], b[off.b]);
  }
}

// Appends dimension d of the output to dims (size-1 dimensions, which move no offset, are skipped).
void append_dim(Dims& dims, int64_t size, int64_t g, int64_t a, int64_t b) {
  if (size == 1) return;
  if (dims.count == max_broadcast_rank)
    throw std::invalid_argument("mcdl::cuda: broadcasting over more than " + std::to_string(max_broadcast_rank) +
                                " dimensions");
  dims.size[dims.count] = size;
  dims.g[dims.count] = g;
  dims.a[dims.count] = a;
  dims.b[dims.count] = b;
  ++dims.count;
}

// ---- gradient sums over broadcast dimensions ---------------------------------------------------
// A view maps target t (an element of the reduced operand's gradient) and position k (one of the
// output positions broadcast onto it, row-major) to a partial derivative: base(t) once per target,
// then value(base, k).

// binary_rows' repeated operand: target = column c, positions = the rows.
template <Operand side, class Op, class T>
struct ColumnView {
  const T *g, *a, *b;
  int64_t cols;
  __device__ int64_t base(int64_t c) const { return c; }
  __device__ double value(int64_t c, int64_t r) const {
    const int64_t i = r * cols + c;
    return static_cast<double>(
        partial<side, Op>(g[i], load<Op::uses_inputs>(a, i), load<Op::uses_inputs>(b, c)));
  }
};

// binary_strided: targets over the kept dimensions, positions over the reduced ones.
template <Operand side, class Op, class T>
struct StridedView {
  const T *g, *a, *b;
  Dims kept, reduced;
  __device__ Offsets base(int64_t t) const { return offsets_at(kept, t, Offsets{}); }
  __device__ double value(Offsets base, int64_t k) const {
    const Offsets off = offsets_at(reduced, k, base);
    return static_cast<double>(
        partial<side, Op>(g[off.g], load<Op::uses_inputs>(a, off.a), load<Op::uses_inputs>(b, off.b)));
  }
};

// Short sums: one thread per target, positions in order (the CPU's order).
template <class View, class T>
__global__ void sum_serial_kernel(View view, T* dst, int64_t targets, int64_t length, bool overwrite) {
  for (int64_t t = grid_index(); t < targets; t += grid_stride()) {
    const auto base = view.base(t);
    double s = 0.0;
    for (int64_t k = 0; k < length; ++k) s += view.value(base, k);
    write_sum(dst + t, s, overwrite);
  }
}

constexpr unsigned warp_width = 32;

// Long sums: a block takes `lanes` consecutive targets (lanes a power of two, at most 32) and
// blockDim.x / lanes threads per target, each summing every (blockDim.x / lanes)-th position.
// Threads of one target meet by xor-shuffles inside each warp, then warp by warp in shared
// memory, in a fixed order.
template <class View, class T>
__global__ void sum_tiles_kernel(View view, T* dst, int64_t targets, int64_t length, unsigned lanes,
                                 bool overwrite) {
  __shared__ double warp_sums[warp_width * warp_width];
  const unsigned per_target = blockDim.x / lanes, tx = threadIdx.x % lanes, ty = threadIdx.x / lanes;
  const unsigned lane = threadIdx.x % warp_width, warp = threadIdx.x / warp_width, warps = blockDim.x / warp_width;
  // The loop bounds depend on blockIdx only, so every thread reaches the barriers.
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * lanes; first < targets;
       first += static_cast<int64_t>(gridDim.x) * lanes) {
    const int64_t t = first + tx;
    double s = 0.0;
    if (t < targets) {
      const auto base = view.base(t);
      for (int64_t k = ty; k < length; k += per_target) s += view.value(base, k);
    }
    for (unsigned offset = warp_width / 2; offset >= lanes; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (lane < lanes) warp_sums[warp * lanes + lane] = s;
    __syncthreads();
    if (threadIdx.x < lanes && t < targets) {
      double total = warp_sums[tx];
      for (unsigned w = 1; w < warps; ++w) total += warp_sums[w * lanes + tx];
      write_sum(dst + t, total, overwrite);
    }
    __syncthreads();  // warp_sums is rewritten by the next tile
  }
}

// At most this many positions per target: one thread sums them alone.
constexpr int64_t serial_length = 16;

// dst[t] (=|+=) Σ_k view.value(t, k) for t < targets, k < length. `contiguous` says that
// consecutive positions are adjacent in memory (then the threads of a block share one target).
template <class View, class T>
void sum_targets(const View& view, T* dst, int64_t targets, int64_t length, bool contiguous, bool overwrite) {
  if (targets == 0) return;
  if (length <= serial_length) {
    launch(sum_serial_kernel<View, T>, elementwise_grid(targets), dim3(elementwise_block()), 0, engine_stream(), view,
           dst, targets, length, overwrite);
    return;
  }
  const unsigned block = block_size(256);
  const unsigned lanes =
      contiguous ? 1u : static_cast<unsigned>(std::min<uint64_t>(warp_width, std::bit_ceil(uint64_t(targets))));
  const auto tiles = static_cast<unsigned>(std::min<int64_t>((targets + lanes - 1) / lanes, 4096));
  launch(sum_tiles_kernel<View, T>, dim3(tiles), dim3(block), 0, engine_stream(), view, dst, targets, length, lanes,
         overwrite);
}

}  // namespace

template <class T>
void unary_forward(UnaryFn fn, const T* x, T* y, int64_t n) {
  with_unary_op(fn, [&](auto op) { unary_map_forward(op, x, y, n); });
}

template <class T>
void unary_backward(UnaryFn fn, const T* g, const T* x, const T* y, T* dx, int64_t n, bool overwrite) {
  with_unary_op(fn, [&](auto op) { unary_map_backward(op, g, x, y, dx, n, overwrite); });
}

template <class T>
void binary_same(BinaryOp op, const T* a, const T* b, T* out, int64_t n) {
  launch_binary(op, a, b, out, n, SameIndex{}, true);
}

template <class T>
void binary_rows(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols) {
  launch_binary(op, a, b, out, rows * cols, column_of(rows * cols, cols), whole_packs_per_row<T>(cols));
}

template <class T>
void binary_strided(BinaryOp op, const T* a, const int64_t* a_strides, const T* b, const int64_t* b_strides, T* out,
                    const int64_t* shape, int64_t rank) {
  int64_t n = 1;
  Dims dims;
  for (int64_t d = 0; d < rank; ++d) {
    n *= shape[d];
    append_dim(dims, shape[d], 0, a_strides[d], b_strides[d]);
  }
  if (n == 0) return;
  with_binary_op(op, [&](auto binary) {
    launch(binary_strided_kernel<decltype(binary), T>, elementwise_grid(n), dim3(elementwise_block()), 0,
           engine_stream(), a, b, out, n, dims);
  });
}

template <class T>
void binary_grad_same(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t n,
                      bool overwrite) {
  launch_binary_grad(op, side, g, a, b, dst, n, overwrite, SameIndex{}, true);
}

template <class T>
void binary_grad_rows_full(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t rows,
                           int64_t cols, bool overwrite) {
  launch_binary_grad(op, side, g, a, b, dst, rows * cols, overwrite, column_of(rows * cols, cols),
                     whole_packs_per_row<T>(cols));
}

template <class T>
void binary_grad_rows_reduced(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t rows,
                              int64_t cols, bool overwrite) {
  with_binary_grad(op, side, [&](auto binary, auto which) {
    const ColumnView<decltype(which)::value, decltype(binary), T> view{g, a, b, cols};
    sum_targets(view, dst, cols, rows, cols == 1, overwrite);
  });
}

template <class T>
void binary_grad_strided(BinaryOp op, Operand side, const T* g, const T* a, const int64_t* a_strides, const T* b,
                         const int64_t* b_strides, const int64_t* shape, const int64_t* target_shape, int64_t rank,
                         T* dst, bool overwrite) {
  std::vector<int64_t> g_strides(static_cast<size_t>(rank));  // g is contiguous
  for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
    g_strides[static_cast<size_t>(d)] = stride;
    stride *= shape[d];
  }
  Dims kept, reduced;
  int64_t targets = 1, length = 1;
  bool innermost_reduced = false;  // the last dimension that moves any offset is summed over
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;
    const bool summed = target_shape[d] == 1;
    append_dim(summed ? reduced : kept, shape[d], g_strides[static_cast<size_t>(d)], a_strides[d], b_strides[d]);
    (summed ? length : targets) *= shape[d];
    innermost_reduced = summed;
  }
  with_binary_grad(op, side, [&](auto binary, auto which) {
    const StridedView<decltype(which)::value, decltype(binary), T> view{g, a, b, kept, reduced};
    sum_targets(view, dst, targets, length, innermost_reduced, overwrite);
  });
}

#define MCDL_INSTANTIATE_ELEMENTWISE(T)                                                                             \
  template void unary_forward<T>(UnaryFn, const T*, T*, int64_t);                                                   \
  template void unary_backward<T>(UnaryFn, const T*, const T*, const T*, T*, int64_t, bool);                        \
  template void binary_same<T>(BinaryOp, const T*, const T*, T*, int64_t);                                          \
  template void binary_rows<T>(BinaryOp, const T*, const T*, T*, int64_t, int64_t);                                 \
  template void binary_strided<T>(BinaryOp, const T*, const int64_t*, const T*, const int64_t*, T*, const int64_t*, \
                                  int64_t);                                                                         \
  template void binary_grad_same<T>(BinaryOp, Operand, const T*, const T*, const T*, T*, int64_t, bool);            \
  template void binary_grad_rows_full<T>(BinaryOp, Operand, const T*, const T*, const T*, T*, int64_t, int64_t,     \
                                         bool);                                                                     \
  template void binary_grad_rows_reduced<T>(BinaryOp, Operand, const T*, const T*, const T*, T*, int64_t, int64_t,  \
                                            bool);                                                                  \
  template void binary_grad_strided<T>(BinaryOp, Operand, const T*, const T*, const int64_t*, const T*,             \
                                       const int64_t*, const int64_t*, const int64_t*, int64_t, T*, bool);
MCDL_INSTANTIATE_ELEMENTWISE(float)
MCDL_INSTANTIATE_ELEMENTWISE(double)
#undef MCDL_INSTANTIATE_ELEMENTWISE

}  // namespace mcdl::cuda
