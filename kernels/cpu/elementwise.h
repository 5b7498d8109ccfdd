// Element-wise math on raw host buffers: unary maps, binary ops with broadcasting, and
// their backward passes. Each op is a small struct holding its forward formula and its
// partial derivatives; the kernels below only walk memory and call those formulas. At the end,
// the same kernels with the op named by value (kernels/elementwise_op.h), the form the CUDA
// twins (kernels/cuda/elementwise.h) take too.
// Gradient sums over broadcast dimensions run in double and in a fixed order, so they do
// not depend on the thread count.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "kernels/elementwise_op.h"

namespace mcdl::cpu {

// ---- unary ops: forward(x) and backward(g, x, y) with y = forward(x) --------------------
// uses_input / uses_output say which of x, y backward reads; the other is never loaded,
// so an op need not keep it alive.

struct Neg {
  static constexpr bool uses_input = false, uses_output = false;
  template <class T> T forward(T x) const { return -x; }
  template <class T> T backward(T g, T, T) const { return -g; }
};
struct Exp {
  static constexpr bool uses_input = false, uses_output = true;
  template <class T> T forward(T x) const { return std::exp(x); }
  template <class T> T backward(T g, T, T y) const { return g * y; }
};
struct Log {
  static constexpr bool uses_input = true, uses_output = false;
  template <class T> T forward(T x) const { return std::log(x); }
  template <class T> T backward(T g, T x, T) const { return g / x; }
};
struct Sqrt {
  static constexpr bool uses_input = false, uses_output = true;
  template <class T> T forward(T x) const { return std::sqrt(x); }
  template <class T> T backward(T g, T, T y) const { return g / (T(2) * y); }
};
struct PowScalar {
  static constexpr bool uses_input = true, uses_output = false;
  double exponent;
  template <class T> T forward(T x) const { return std::pow(x, static_cast<T>(exponent)); }
  // PyTorch's pow_backward: exactly zero for exponent 0 (no 0·x⁻¹ = NaN at x = 0).
  template <class T> T backward(T g, T x, T) const {
    if (exponent == 0.0) return T(0);
    const T p = static_cast<T>(exponent);
    return g * p * std::pow(x, p - T(1));
  }
};
// Tensor-scalar forms; the scalar is rounded to T once, as PyTorch does for a Python number.
struct AddScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> T forward(T x) const { return x + static_cast<T>(s); }
  template <class T> T backward(T g, T, T) const { return g; }
};
struct SubScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> T forward(T x) const { return x - static_cast<T>(s); }
  template <class T> T backward(T g, T, T) const { return g; }
};
struct RSubScalar {  // s - x
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> T forward(T x) const { return static_cast<T>(s) - x; }
  template <class T> T backward(T g, T, T) const { return -g; }
};
struct MulScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> T forward(T x) const { return x * static_cast<T>(s); }
  template <class T> T backward(T g, T, T) const { return g * static_cast<T>(s); }
};
struct DivScalar {
  static constexpr bool uses_input = false, uses_output = false;
  double s;
  template <class T> T forward(T x) const { return x / static_cast<T>(s); }
  template <class T> T backward(T g, T, T) const { return g / static_cast<T>(s); }
};
struct RDivScalar {  // s / x, d/dx = -s/x² = -y/x
  static constexpr bool uses_input = true, uses_output = true;
  double s;
  template <class T> T forward(T x) const { return static_cast<T>(s) / x; }
  template <class T> T backward(T g, T x, T y) const { return -g * y / x; }
};

// ---- binary ops: forward(x, y), grad_x(g, x, y), grad_y(g, x, y) ----------------------

struct Add {
  static constexpr bool uses_inputs = false;
  template <class T> static T forward(T x, T y) { return x + y; }
  template <class T> static T grad_x(T g, T, T) { return g; }
  template <class T> static T grad_y(T g, T, T) { return g; }
};
struct Sub {
  static constexpr bool uses_inputs = false;
  template <class T> static T forward(T x, T y) { return x - y; }
  template <class T> static T grad_x(T g, T, T) { return g; }
  template <class T> static T grad_y(T g, T, T) { return -g; }
};
struct Mul {
  static constexpr bool uses_inputs = true;
  template <class T> static T forward(T x, T y) { return x * y; }
  template <class T> static T grad_x(T g, T, T y) { return g * y; }
  template <class T> static T grad_y(T g, T x, T) { return g * x; }
};
struct Div {
  static constexpr bool uses_inputs = true;
  template <class T> static T forward(T x, T y) { return x / y; }
  template <class T> static T grad_x(T g, T, T y) { return g / y; }
  template <class T> static T grad_y(T g, T x, T y) { return -g * x / (y * y); }
};

namespace detail {
// p[i] when the formula reads it, else a dummy: an op that does not need a value may pass
// a null pointer for it.
template <bool used, class T>
T load(const T* p, int64_t i) {
  if constexpr (used) {
    return p[i];
  } else {
    return T(0);
  }
}

template <Operand side, class Op, class T>
T partial(T g, T x, T y) {
  if constexpr (side == Operand::x) {
    return Op::grad_x(g, x, y);
  } else {
    return Op::grad_y(g, x, y);
  }
}

// dst[i] = value(i) when overwrite, else dst[i] += value(i); every element is written.
template <class T, class F>
void write_gradient(T* dst, int64_t n, bool overwrite, F&& value) {
  if (overwrite) {
    parallel_for(n, [&](int64_t i) { dst[i] = value(i); });
  } else {
    parallel_for(n, [&](int64_t i) { dst[i] += value(i); });
  }
}

inline void write_sum(float* dst, double s, bool overwrite) {
  *dst = overwrite ? static_cast<float>(s) : static_cast<float>(*dst + s);
}
inline void write_sum(double* dst, double s, bool overwrite) { *dst = overwrite ? s : *dst + s; }
}  // namespace detail

// ---- unary kernels --------------------------------------------------------------------

template <class T, class Op>
void unary_forward(const T* x, T* y, int64_t n, const Op& op) {
  parallel_for(n, [&](int64_t i) { y[i] = op.forward(x[i]); });
}

// dx (=|+=) op.backward(g, x, y); x or y may be null when the op does not read it.
template <class T, class Op>
void unary_backward(const T* g, const T* x, const T* y, T* dx, int64_t n, bool overwrite, const Op& op) {
  detail::write_gradient(dx, n, overwrite, [&](int64_t i) {
    return op.backward(g[i], detail::load<Op::uses_input>(x, i), detail::load<Op::uses_output>(y, i));
  });
}

// ---- binary forward kernels -------------------------------------------------------------

// a and b of the same shape, n elements.
template <class Op, class T>
void binary_same(const T* a, const T* b, T* out, int64_t n) {
  parallel_for(n, [&](int64_t i) { out[i] = Op::forward(a[i], b[i]); });
}

// a is [rows, cols] and b is [cols], repeated over the rows (a bias).
template <class Op, class T>
void binary_rows(const T* a, const T* b, T* out, int64_t rows, int64_t cols) {
  parallel_rows(rows, cols, [&](int64_t r) {
    const T* ar = a + r * cols;
    T* outr = out + r * cols;
    for (int64_t c = 0; c < cols; ++c) outr[c] = Op::forward(ar[c], b[c]);
  });
}

// General broadcasting: out is contiguous with `shape` (rank >= 1); a_strides / b_strides
// give each operand's element stride per output dimension (0 where it is broadcast). Any rank
// (the CUDA kernels take at most their max_broadcast_rank).
inline constexpr int64_t max_broadcast_rank = std::numeric_limits<int64_t>::max();
template <class Op, class T>
void binary_strided(const T* a, const int64_t* a_strides, const T* b, const int64_t* b_strides, T* out,
                    const int64_t* shape, int64_t rank) {
  const int64_t cols = shape[rank - 1];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d) rows *= shape[d];
  if (rows * cols == 0) return;
  const int64_t sa = a_strides[rank - 1], sb = b_strides[rank - 1];
  parallel_rows(rows, cols, [&](int64_t r) {
    int64_t oa = 0, ob = 0;
    for (int64_t d = rank - 2, rest = r; d >= 0; --d) {
      const int64_t coord = rest % shape[d];
      rest /= shape[d];
      oa += coord * a_strides[d];
      ob += coord * b_strides[d];
    }
    T* outr = out + r * cols;
    for (int64_t c = 0; c < cols; ++c) outr[c] = Op::forward(a[oa + c * sa], b[ob + c * sb]);
  });
}

// ---- binary backward kernels: dst (=|+=) the gradient of one operand --------------------
// g is the output gradient; a / b may be null when Op::uses_inputs is false.

template <Operand side, class Op, class T>
void binary_grad_same(const T* g, const T* a, const T* b, T* dst, int64_t n, bool overwrite) {
  detail::write_gradient(dst, n, overwrite, [&](int64_t i) {
    return detail::partial<side, Op>(g[i], detail::load<Op::uses_inputs>(a, i),
                                     detail::load<Op::uses_inputs>(b, i));
  });
}

// Layout of binary_rows, gradient of the full-size operand a ([rows, cols]).
template <Operand side, class Op, class T>
void binary_grad_rows_full(const T* g, const T* a, const T* b, T* dst, int64_t rows, int64_t cols,
                           bool overwrite) {
  detail::write_gradient(dst, rows * cols, overwrite, [&](int64_t i) {
    return detail::partial<side, Op>(g[i], detail::load<Op::uses_inputs>(a, i),
                                     detail::load<Op::uses_inputs>(b, i % cols));
  });
}

// Layout of binary_rows, gradient of the repeated operand b ([cols]): column sums of the
// partials. Blocks of rows × tiles of columns are summed in parallel, then each column adds
// its block sums in block order.
template <Operand side, class Op, class T>
void binary_grad_rows_reduced(const T* g, const T* a, const T* b, T* dst, int64_t rows, int64_t cols,
                              bool overwrite) {
  constexpr int64_t row_block = 256, col_tile = 1024;
  const int64_t blocks = (rows + row_block - 1) / row_block;
  const int64_t tiles = (cols + col_tile - 1) / col_tile;
  std::vector<double> partial(static_cast<size_t>(blocks * cols), 0.0);
  parallel_rows(blocks * tiles, row_block * col_tile, [&](int64_t task) {
    const int64_t block = task / tiles, tile = task % tiles;
    const int64_t r_end = std::min(rows, (block + 1) * row_block);
    const int64_t c_begin = tile * col_tile, c_end = std::min(cols, c_begin + col_tile);
    double* acc = partial.data() + block * cols;
    for (int64_t r = block * row_block; r < r_end; ++r) {
      for (int64_t c = c_begin; c < c_end; ++c) {
        const int64_t i = r * cols + c;
        acc[c] += detail::partial<side, Op>(g[i], detail::load<Op::uses_inputs>(a, i),
                                            detail::load<Op::uses_inputs>(b, c));
      }
    }
  });
  parallel_for(cols, [&](int64_t c) {
    double s = 0.0;
    for (int64_t block = 0; block < blocks; ++block) s += partial[static_cast<size_t>(block * cols + c)];
    detail::write_sum(dst + c, s, overwrite);
  });
}

// General broadcasting (layout of binary_strided): the gradient of the operand whose shape,
// left-padded with 1s to `rank`, is `target_shape`. Each target element sums the partials
// over the output positions that broadcast onto it, in row-major order of those positions.
template <Operand side, class Op, class T>
void binary_grad_strided(const T* g, const T* a, const int64_t* a_strides, const T* b, const int64_t* b_strides,
                         const int64_t* shape, const int64_t* target_shape, int64_t rank, T* dst,
                         bool overwrite) {
  std::vector<int64_t> kept, reduced, g_strides(static_cast<size_t>(rank));
  int64_t count = 1, per_target = 1;
  for (int64_t d = rank - 1, stride = 1; d >= 0; --d) {
    g_strides[static_cast<size_t>(d)] = stride;
    stride *= shape[d];
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (target_shape[d] == 1 && shape[d] != 1) {
      reduced.push_back(d);
      per_target *= shape[d];
    } else {
      kept.push_back(d);
      count *= shape[d];
    }
  }
  // Offsets of g, a, b for a coordinate `index` over the dims `dims` (row-major).
  auto offsets = [&](const std::vector<int64_t>& dims, int64_t index, int64_t off[3]) {
    for (size_t j = dims.size(); j-- > 0;) {
      const int64_t d = dims[j], coord = index % shape[d];
      index /= shape[d];
      off[0] += coord * g_strides[static_cast<size_t>(d)];
      off[1] += coord * a_strides[d];
      off[2] += coord * b_strides[d];
    }
  };
  // The innermost reduced dimension is a plain strided loop; the others are unravelled.
  const int64_t last = reduced.empty() ? -1 : reduced.back();
  const int64_t inner = last < 0 ? 1 : shape[last];
  const std::vector<int64_t> outer_dims(reduced.begin(), reduced.end() - (last < 0 ? 0 : 1));
  const int64_t outer = inner == 0 ? 0 : per_target / inner;
  const int64_t sg = last < 0 ? 0 : g_strides[static_cast<size_t>(last)];
  const int64_t sa = last < 0 ? 0 : a_strides[last], sb = last < 0 ? 0 : b_strides[last];
  parallel_rows(count, per_target, [&](int64_t t) {
    int64_t base[3] = {0, 0, 0};
    offsets(kept, t, base);
    double s = 0.0;
    for (int64_t o = 0; o < outer; ++o) {
      int64_t off[3] = {base[0], base[1], base[2]};
      offsets(outer_dims, o, off);
      for (int64_t k = 0; k < inner; ++k) {
        s += detail::partial<side, Op>(g[off[0] + k * sg], detail::load<Op::uses_inputs>(a, off[1] + k * sa),
                                       detail::load<Op::uses_inputs>(b, off[2] + k * sb));
      }
    }
    detail::write_sum(dst + t, s, overwrite);
  });
}

// ---- the ops named by value (UnaryFn, BinaryOp, Operand) ------------------------------------

// Calls f with the functor of fn.
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

// What an op's derivative reads (its uses_input, uses_output, uses_inputs): an op keeps only
// those values alive for its backward, and passes null for the others.
inline bool uses_input(UnaryFn fn) {
  bool uses = false;
  with_unary_op(fn, [&](auto op) { uses = decltype(op)::uses_input; });
  return uses;
}
inline bool uses_output(UnaryFn fn) {
  bool uses = false;
  with_unary_op(fn, [&](auto op) { uses = decltype(op)::uses_output; });
  return uses;
}
inline bool uses_inputs(BinaryOp op) {
  bool uses = false;
  with_binary_op(op, [&](auto binary) { uses = decltype(binary)::uses_inputs; });
  return uses;
}

template <class T>
void unary_forward(UnaryFn fn, const T* x, T* y, int64_t n) {
  with_unary_op(fn, [&](const auto& op) { unary_forward(x, y, n, op); });
}
template <class T>
void unary_backward(UnaryFn fn, const T* g, const T* x, const T* y, T* dx, int64_t n, bool overwrite) {
  with_unary_op(fn, [&](const auto& op) { unary_backward(g, x, y, dx, n, overwrite, op); });
}

template <class T>
void binary_same(BinaryOp op, const T* a, const T* b, T* out, int64_t n) {
  with_binary_op(op, [&](auto binary) { binary_same<decltype(binary)>(a, b, out, n); });
}
template <class T>
void binary_rows(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols) {
  with_binary_op(op, [&](auto binary) { binary_rows<decltype(binary)>(a, b, out, rows, cols); });
}
template <class T>
void binary_strided(BinaryOp op, const T* a, const int64_t* a_strides, const T* b, const int64_t* b_strides, T* out,
                    const int64_t* shape, int64_t rank) {
  with_binary_op(op, [&](auto binary) {
    binary_strided<decltype(binary)>(a, a_strides, b, b_strides, out, shape, rank);
  });
}

template <class T>
void binary_grad_same(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t n,
                      bool overwrite) {
  with_binary_grad(op, side, [&](auto binary, auto operand) {
    binary_grad_same<decltype(operand)::value, decltype(binary)>(g, a, b, dst, n, overwrite);
  });
}
template <class T>
void binary_grad_rows_full(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t rows,
                           int64_t cols, bool overwrite) {
  with_binary_grad(op, side, [&](auto binary, auto operand) {
    binary_grad_rows_full<decltype(operand)::value, decltype(binary)>(g, a, b, dst, rows, cols, overwrite);
  });
}
template <class T>
void binary_grad_rows_reduced(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t rows,
                              int64_t cols, bool overwrite) {
  with_binary_grad(op, side, [&](auto binary, auto operand) {
    binary_grad_rows_reduced<decltype(operand)::value, decltype(binary)>(g, a, b, dst, rows, cols, overwrite);
  });
}
template <class T>
void binary_grad_strided(BinaryOp op, Operand side, const T* g, const T* a, const int64_t* a_strides, const T* b,
                         const int64_t* b_strides, const int64_t* shape, const int64_t* target_shape, int64_t rank,
                         T* dst, bool overwrite) {
  with_binary_grad(op, side, [&](auto binary, auto operand) {
    binary_grad_strided<decltype(operand)::value, decltype(binary)>(g, a, a_strides, b, b_strides, shape,
                                                                    target_shape, rank, dst, overwrite);
  });
}

}  // namespace mcdl::cpu
