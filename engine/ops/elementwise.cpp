#include "engine/ops/elementwise.h"

#include <algorithm>

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"

namespace mcdl {
namespace {

// How the operands of a binary op map onto its output, picked once per call.
struct BroadcastLayout {
  enum class Kind {
    same,     // a and b have the output's shape
    rows,     // a has the output's shape [rows, cols]; b (leading 1s aside) is its trailing dims
    strided,  // anything else
  };
  Kind kind = Kind::same;
  Shape out;
  int64_t rows = 0, cols = 0;  // Kind::rows
  Shape a_shape, b_shape;      // Kind::strided: operand shapes left-padded with 1s to out's rank,
  Shape a_strides, b_strides;  // and their element strides per output dim (0 where broadcast)
};

Shape left_padded(const Shape& shape, size_t rank) {
  Shape padded(rank - shape.size(), 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  return padded;
}

Shape broadcast_strides(const Shape& padded) {
  Shape strides(padded.size());
  int64_t stride = 1;
  for (size_t d = padded.size(); d-- > 0;) {
    strides[d] = padded[d] == 1 ? 0 : stride;
    stride *= padded[d];
  }
  return strides;
}

// b, without its leading 1s, equals the trailing dimensions of a.
bool is_trailing_part(const Shape& b, const Shape& a) {
  const auto first = std::find_if(b.begin(), b.end(), [](int64_t d) { return d != 1; });
  const size_t n = static_cast<size_t>(b.end() - first);
  return n <= a.size() && std::equal(first, b.end(), a.end() - static_cast<std::ptrdiff_t>(n));
}

BroadcastLayout broadcast_layout(const char* op, const Tensor& a, const Tensor& b) {
  BroadcastLayout layout;
  layout.out = broadcast_shape(op, a.shape(), b.shape());
  if (a.shape() == b.shape()) return layout;
  const size_t rank = layout.out.size();
  if (left_padded(a.shape(), rank) == layout.out && b.numel() > 0 && is_trailing_part(b.shape(), a.shape())) {
    layout.kind = BroadcastLayout::Kind::rows;
    layout.cols = b.numel();
    layout.rows = a.numel() / layout.cols;
    return layout;
  }
  layout.kind = BroadcastLayout::Kind::strided;
  layout.a_shape = left_padded(a.shape(), rank);
  layout.b_shape = left_padded(b.shape(), rank);
  layout.a_strides = broadcast_strides(layout.a_shape);
  layout.b_strides = broadcast_strides(layout.b_shape);
  return layout;
}

// out = a op b with the layout's broadcasting, on the kernels' device.
template <class Kernels, class T>
void binary_forward(Kernels k, BinaryOp op, const BroadcastLayout& l, const T* a, const T* b, T* out) {
  switch (l.kind) {
    case BroadcastLayout::Kind::same: k.binary_same(op, a, b, out, shape_numel(l.out)); return;
    case BroadcastLayout::Kind::rows: k.binary_rows(op, a, b, out, l.rows, l.cols); return;
    case BroadcastLayout::Kind::strided:
      k.binary_strided(op, a, l.a_strides.data(), b, l.b_strides.data(), out, l.out.data(),
                       static_cast<int64_t>(l.out.size()));
      return;
  }
}

// dst (=|+=) the gradient of operand `side`, summed over the dimensions it was broadcast along.
template <class Kernels, class T>
void binary_backward(Kernels k, BinaryOp op, Operand side, const BroadcastLayout& l, const T* g, const T* a,
                     const T* b, T* dst, bool overwrite) {
  switch (l.kind) {
    case BroadcastLayout::Kind::same: k.binary_grad_same(op, side, g, a, b, dst, shape_numel(l.out), overwrite); return;
    case BroadcastLayout::Kind::rows:
      if (side == Operand::x) {
        k.binary_grad_rows_full(op, side, g, a, b, dst, l.rows, l.cols, overwrite);
      } else {
        k.binary_grad_rows_reduced(op, side, g, a, b, dst, l.rows, l.cols, overwrite);
      }
      return;
    case BroadcastLayout::Kind::strided: {
      const Shape& target = side == Operand::x ? l.a_shape : l.b_shape;
      k.binary_grad_strided(op, side, g, a, l.a_strides.data(), b, l.b_strides.data(), l.out.data(), target.data(),
                            static_cast<int64_t>(l.out.size()), dst, overwrite);
      return;
    }
  }
}

Tensor binary(const char* name, BinaryOp op, const Tensor& a, const Tensor& b) {
  check_same_dtype_device(name, a, b);
  check_floating(name, a);
  const BroadcastLayout layout = broadcast_layout(name, a, b);
  Tensor out = empty(layout.out, a.dtype(), a.device());
  on_device(a.device(), [&](auto k) {
    const int64_t rank = static_cast<int64_t>(layout.out.size());
    check(layout.kind != BroadcastLayout::Kind::strided || rank <= k.max_broadcast_rank, name, ": broadcasting ", a,
          " with ", b, " has more than ", k.max_broadcast_rank, " dimensions, the most the cuda kernels take");
    dispatch_floating(a.dtype(), name, [&](auto zero) {
      using T = decltype(zero);
      binary_forward(k, op, layout, a.ptr<T>(), b.ptr<T>(), out.ptr<T>());
    });
  });
  // add and sub need only the output gradient: they keep no input alive.
  const bool keep_inputs = cpu::uses_inputs(op);
  const Tensor saved_a = keep_inputs ? a : Tensor(), saved_b = keep_inputs ? b : Tensor();
  record(out, name, {a, b}, [name, op, layout, saved_a, saved_b](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), name, [&](auto zero) {
      using T = decltype(zero);
      const T* ap = saved_a.defined() ? saved_a.ptr<T>() : nullptr;
      const T* bp = saved_b.defined() ? saved_b.ptr<T>() : nullptr;
      on_device(g.device(), [&](auto k) {
        GradMode mode;
        if (sink.needed(0)) {
          Tensor& da = sink.buffer(0, mode);
          binary_backward(k, op, Operand::x, layout, g.ptr<T>(), ap, bp, da.ptr<T>(), mode == GradMode::Overwrite);
        }
        if (sink.needed(1)) {
          Tensor& db = sink.buffer(1, mode);
          binary_backward(k, op, Operand::y, layout, g.ptr<T>(), ap, bp, db.ptr<T>(), mode == GradMode::Overwrite);
        }
      });
    });
  });
  return out;
}

Tensor unary(const char* name, const Tensor& a, UnaryFn fn) {
  check_floating(name, a);
  Tensor out = empty(a.shape(), a.dtype(), a.device());
  dispatch_floating(a.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    on_device(a.device(), [&](auto k) { k.unary_forward(fn, a.ptr<T>(), out.ptr<T>(), a.numel()); });
  });
  // Keep only what the derivative reads; the output through detach() (no cycle).
  const Tensor saved_in = cpu::uses_input(fn) ? a : Tensor();
  const Tensor saved_out = cpu::uses_output(fn) ? out.detach() : Tensor();
  record(out, name, {a}, [name, fn, saved_in, saved_out](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), name, [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& da = sink.buffer(0, mode);
      const T* in = saved_in.defined() ? saved_in.ptr<T>() : nullptr;
      const T* result = saved_out.defined() ? saved_out.ptr<T>() : nullptr;
      on_device(g.device(), [&](auto k) {
        k.unary_backward(fn, g.ptr<T>(), in, result, da.ptr<T>(), g.numel(), mode == GradMode::Overwrite);
      });
    });
  });
  return out;
}

}  // namespace

Shape broadcast_shape(const char* op, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  const Shape pa = left_padded(a, rank), pb = left_padded(b, rank);
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (pa[d] != pb[d] && pa[d] != 1 && pb[d] != 1)
      fail(op, ": cannot broadcast shapes ", shape_str(a), " and ", shape_str(b), ": sizes ", pa[d], " and ", pb[d],
           " differ and neither is 1");
    out[d] = pa[d] == 1 ? pb[d] : pa[d];
  }
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary("add", BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary("sub", BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary("mul", BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary("div", BinaryOp::div, a, b); }

Tensor expand(const Tensor& x, const Shape& shape) {
  check_defined("expand", x);
  check(broadcast_shape("expand", x.shape(), shape) == shape, "expand: ", x, " does not broadcast to ",
        shape_str(shape), " without growing it");
  return add(zeros(shape, x.dtype(), x.device()), x);
}

Tensor add(const Tensor& a, double s) { return unary("add", a, {UnaryOp::add_scalar, s}); }
Tensor sub(const Tensor& a, double s) { return unary("sub", a, {UnaryOp::sub_scalar, s}); }
Tensor rsub(double s, const Tensor& a) { return unary("rsub", a, {UnaryOp::rsub_scalar, s}); }
Tensor mul(const Tensor& a, double s) { return unary("mul", a, {UnaryOp::mul_scalar, s}); }
Tensor div(const Tensor& a, double s) { return unary("div", a, {UnaryOp::div_scalar, s}); }
Tensor rdiv(double s, const Tensor& a) { return unary("rdiv", a, {UnaryOp::rdiv_scalar, s}); }

Tensor neg(const Tensor& a) { return unary("neg", a, {UnaryOp::neg, 0.0}); }
Tensor exp(const Tensor& a) { return unary("exp", a, {UnaryOp::exp, 0.0}); }
Tensor log(const Tensor& a) { return unary("log", a, {UnaryOp::log, 0.0}); }
Tensor sqrt(const Tensor& a) { return unary("sqrt", a, {UnaryOp::sqrt, 0.0}); }
Tensor pow(const Tensor& a, double exponent) { return unary("pow", a, {UnaryOp::pow, exponent}); }

}  // namespace mcdl
