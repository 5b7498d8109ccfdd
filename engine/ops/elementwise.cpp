#include "engine/ops/elementwise.h"

#include <algorithm>

#include "engine/autograd.h"
#include "engine/dispatch.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/elementwise.h"

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

template <class Op, class T>
void binary_forward_cpu(const BroadcastLayout& l, const T* a, const T* b, T* out) {
  switch (l.kind) {
    case BroadcastLayout::Kind::same: cpu::binary_same<Op>(a, b, out, shape_numel(l.out)); return;
    case BroadcastLayout::Kind::rows: cpu::binary_rows<Op>(a, b, out, l.rows, l.cols); return;
    case BroadcastLayout::Kind::strided:
      cpu::binary_strided<Op>(a, l.a_strides.data(), b, l.b_strides.data(), out, l.out.data(),
                              static_cast<int64_t>(l.out.size()));
      return;
  }
}

// dst (=|+=) the gradient of operand `side`, summed over the dimensions it was broadcast along.
template <cpu::Operand side, class Op, class T>
void binary_backward_cpu(const BroadcastLayout& l, const T* g, const T* a, const T* b, T* dst, bool overwrite) {
  switch (l.kind) {
    case BroadcastLayout::Kind::same:
      cpu::binary_grad_same<side, Op>(g, a, b, dst, shape_numel(l.out), overwrite);
      return;
    case BroadcastLayout::Kind::rows:
      if constexpr (side == cpu::Operand::x) {
        cpu::binary_grad_rows_full<side, Op>(g, a, b, dst, l.rows, l.cols, overwrite);
      } else {
        cpu::binary_grad_rows_reduced<side, Op>(g, a, b, dst, l.rows, l.cols, overwrite);
      }
      return;
    case BroadcastLayout::Kind::strided: {
      const Shape& target = side == cpu::Operand::x ? l.a_shape : l.b_shape;
      cpu::binary_grad_strided<side, Op>(g, a, l.a_strides.data(), b, l.b_strides.data(), l.out.data(),
                                         target.data(), static_cast<int64_t>(l.out.size()), dst, overwrite);
      return;
    }
  }
}

// The CUDA kernels name the ops of kernels/cpu/elementwise.h by enum.
constexpr cuda::BinaryOp cuda_op(cpu::Add) { return cuda::BinaryOp::add; }
constexpr cuda::BinaryOp cuda_op(cpu::Sub) { return cuda::BinaryOp::sub; }
constexpr cuda::BinaryOp cuda_op(cpu::Mul) { return cuda::BinaryOp::mul; }
constexpr cuda::BinaryOp cuda_op(cpu::Div) { return cuda::BinaryOp::div; }
constexpr cuda::Operand cuda_side(cpu::Operand side) {
  return side == cpu::Operand::x ? cuda::Operand::x : cuda::Operand::y;
}

cuda::UnaryFn cuda_fn(const cpu::Neg&) { return {cuda::UnaryOp::neg, 0.0}; }
cuda::UnaryFn cuda_fn(const cpu::Exp&) { return {cuda::UnaryOp::exp, 0.0}; }
cuda::UnaryFn cuda_fn(const cpu::Log&) { return {cuda::UnaryOp::log, 0.0}; }
cuda::UnaryFn cuda_fn(const cpu::Sqrt&) { return {cuda::UnaryOp::sqrt, 0.0}; }
cuda::UnaryFn cuda_fn(const cpu::PowScalar& op) { return {cuda::UnaryOp::pow, op.exponent}; }
cuda::UnaryFn cuda_fn(const cpu::AddScalar& op) { return {cuda::UnaryOp::add_scalar, op.s}; }
cuda::UnaryFn cuda_fn(const cpu::SubScalar& op) { return {cuda::UnaryOp::sub_scalar, op.s}; }
cuda::UnaryFn cuda_fn(const cpu::RSubScalar& op) { return {cuda::UnaryOp::rsub_scalar, op.s}; }
cuda::UnaryFn cuda_fn(const cpu::MulScalar& op) { return {cuda::UnaryOp::mul_scalar, op.s}; }
cuda::UnaryFn cuda_fn(const cpu::DivScalar& op) { return {cuda::UnaryOp::div_scalar, op.s}; }
cuda::UnaryFn cuda_fn(const cpu::RDivScalar& op) { return {cuda::UnaryOp::rdiv_scalar, op.s}; }

template <class Op, class T>
void binary_forward_cuda(const BroadcastLayout& l, const T* a, const T* b, T* out) {
  switch (l.kind) {
    case BroadcastLayout::Kind::same: cuda::binary_same(cuda_op(Op{}), a, b, out, shape_numel(l.out)); return;
    case BroadcastLayout::Kind::rows: cuda::binary_rows(cuda_op(Op{}), a, b, out, l.rows, l.cols); return;
    case BroadcastLayout::Kind::strided:
      cuda::binary_strided(cuda_op(Op{}), a, l.a_strides.data(), b, l.b_strides.data(), out, l.out.data(),
                           static_cast<int64_t>(l.out.size()));
      return;
  }
}

template <cpu::Operand side, class Op, class T>
void binary_backward_cuda(const BroadcastLayout& l, const T* g, const T* a, const T* b, T* dst, bool overwrite) {
  const cuda::BinaryOp op = cuda_op(Op{});
  switch (l.kind) {
    case BroadcastLayout::Kind::same:
      cuda::binary_grad_same(op, cuda_side(side), g, a, b, dst, shape_numel(l.out), overwrite);
      return;
    case BroadcastLayout::Kind::rows:
      if constexpr (side == cpu::Operand::x) {
        cuda::binary_grad_rows_full(op, cuda_side(side), g, a, b, dst, l.rows, l.cols, overwrite);
      } else {
        cuda::binary_grad_rows_reduced(op, cuda_side(side), g, a, b, dst, l.rows, l.cols, overwrite);
      }
      return;
    case BroadcastLayout::Kind::strided: {
      const Shape& target = side == cpu::Operand::x ? l.a_shape : l.b_shape;
      cuda::binary_grad_strided(op, cuda_side(side), g, a, l.a_strides.data(), b, l.b_strides.data(), l.out.data(),
                                target.data(), static_cast<int64_t>(l.out.size()), dst, overwrite);
      return;
    }
  }
}

template <cpu::Operand side, class Op, class T>
void binary_backward(DeviceType device, const BroadcastLayout& l, const T* g, const T* a, const T* b, T* dst,
                     bool overwrite) {
  switch (device) {
    case DeviceType::cpu: binary_backward_cpu<side, Op>(l, g, a, b, dst, overwrite); return;
    case DeviceType::cuda: binary_backward_cuda<side, Op>(l, g, a, b, dst, overwrite); return;
  }
}

template <class Op>
Tensor binary(const char* op, const Tensor& a, const Tensor& b) {
  check_same_dtype_device(op, a, b);
  check_floating(op, a);
  const BroadcastLayout layout = broadcast_layout(op, a, b);
  Tensor out = empty(layout.out, a.dtype(), a.device());
  switch (a.device().type) {
    case DeviceType::cpu:
      dispatch_floating(a.dtype(), op, [&](auto zero) {
        using T = decltype(zero);
        binary_forward_cpu<Op>(layout, a.data<T>(), b.data<T>(), out.data<T>());
      });
      break;
    case DeviceType::cuda:
      check(layout.kind != BroadcastLayout::Kind::strided ||
                static_cast<int64_t>(layout.out.size()) <= cuda::max_broadcast_rank,
            op, ": broadcasting ", a, " with ", b, " has more than ", cuda::max_broadcast_rank,
            " dimensions, the most the cuda kernels take");
      dispatch_floating(a.dtype(), op, [&](auto zero) {
        using T = decltype(zero);
        binary_forward_cuda<Op>(layout, a.ptr<T>(), b.ptr<T>(), out.ptr<T>());
      });
      break;
  }
  // add and sub need only the output gradient: they keep no input alive.
  const Tensor saved_a = Op::uses_inputs ? a : Tensor(), saved_b = Op::uses_inputs ? b : Tensor();
  record(out, op, {a, b}, [op, layout, saved_a, saved_b](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), op, [&](auto zero) {
      using T = decltype(zero);
      const DeviceType device = g.device().type;
      const T* ap = saved_a.defined() ? saved_a.ptr<T>() : nullptr;
      const T* bp = saved_b.defined() ? saved_b.ptr<T>() : nullptr;
      GradMode mode;
      if (sink.needed(0)) {
        Tensor& da = sink.buffer(0, mode);
        binary_backward<cpu::Operand::x, Op>(device, layout, g.ptr<T>(), ap, bp, da.ptr<T>(),
                                             mode == GradMode::Overwrite);
      }
      if (sink.needed(1)) {
        Tensor& db = sink.buffer(1, mode);
        binary_backward<cpu::Operand::y, Op>(device, layout, g.ptr<T>(), ap, bp, db.ptr<T>(),
                                             mode == GradMode::Overwrite);
      }
    });
  });
  return out;
}

template <class Op>
Tensor unary(const char* op_name, const Tensor& a, const Op& op) {
  check_floating(op_name, a);
  Tensor out = empty(a.shape(), a.dtype(), a.device());
  switch (a.device().type) {
    case DeviceType::cpu:
      dispatch_floating(a.dtype(), op_name, [&](auto zero) {
        using T = decltype(zero);
        cpu::unary_forward(a.data<T>(), out.data<T>(), a.numel(), op);
      });
      break;
    case DeviceType::cuda:
      dispatch_floating(a.dtype(), op_name, [&](auto zero) {
        using T = decltype(zero);
        cuda::unary_forward(cuda_fn(op), a.ptr<T>(), out.ptr<T>(), a.numel());
      });
      break;
  }
  // Keep only what the derivative reads; the output through detach() (no cycle).
  const Tensor saved_in = Op::uses_input ? a : Tensor();
  const Tensor saved_out = Op::uses_output ? out.detach() : Tensor();
  record(out, op_name, {a}, [op_name, op, saved_in, saved_out](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), op_name, [&](auto zero) {
      using T = decltype(zero);
      GradMode mode;
      Tensor& da = sink.buffer(0, mode);
      const T* in = saved_in.defined() ? saved_in.ptr<T>() : nullptr;
      const T* result = saved_out.defined() ? saved_out.ptr<T>() : nullptr;
      switch (g.device().type) {
        case DeviceType::cpu:
          cpu::unary_backward(g.data<T>(), in, result, da.data<T>(), g.numel(), mode == GradMode::Overwrite, op);
          break;
        case DeviceType::cuda:
          cuda::unary_backward(cuda_fn(op), g.ptr<T>(), in, result, da.ptr<T>(), g.numel(),
                               mode == GradMode::Overwrite);
          break;
      }
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

Tensor add(const Tensor& a, const Tensor& b) { return binary<cpu::Add>("add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary<cpu::Sub>("sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary<cpu::Mul>("mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary<cpu::Div>("div", a, b); }

Tensor add(const Tensor& a, double s) { return unary("add", a, cpu::AddScalar{s}); }
Tensor sub(const Tensor& a, double s) { return unary("sub", a, cpu::SubScalar{s}); }
Tensor rsub(double s, const Tensor& a) { return unary("rsub", a, cpu::RSubScalar{s}); }
Tensor mul(const Tensor& a, double s) { return unary("mul", a, cpu::MulScalar{s}); }
Tensor div(const Tensor& a, double s) { return unary("div", a, cpu::DivScalar{s}); }
Tensor rdiv(double s, const Tensor& a) { return unary("rdiv", a, cpu::RDivScalar{s}); }

Tensor neg(const Tensor& a) { return unary("neg", a, cpu::Neg{}); }
Tensor exp(const Tensor& a) { return unary("exp", a, cpu::Exp{}); }
Tensor log(const Tensor& a) { return unary("log", a, cpu::Log{}); }
Tensor sqrt(const Tensor& a) { return unary("sqrt", a, cpu::Sqrt{}); }
Tensor pow(const Tensor& a, double exponent) { return unary("pow", a, cpu::PowScalar{exponent}); }

}  // namespace mcdl
