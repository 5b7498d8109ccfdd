// Element-wise math on device buffers: unary maps, binary ops with broadcasting, and their
// backward passes (the CUDA twins of kernels/cpu/elementwise.h, with the op named by value:
// kernels/elementwise_op.h). Gradient sums over broadcast dimensions run in double, in a
// fixed order for a given block size (no atomics). Launches are queued on the engine stream.
#pragma once
#include <cstdint>

#include "kernels/elementwise_op.h"

namespace mcdl::cuda {

template <class T>
void unary_forward(UnaryFn fn, const T* x, T* y, int64_t n);
// dx (=|+=) the derivative of fn times g. x or y may be null where the CPU op does not read it
// (its uses_input / uses_output).
template <class T>
void unary_backward(UnaryFn fn, const T* g, const T* x, const T* y, T* dx, int64_t n, bool overwrite);

// Forward, the three layouts of kernels/cpu/elementwise.h: same shape (n elements); a [rows,
// cols] with b [cols] repeated over the rows; general broadcasting with per-dimension element
// strides (0 where broadcast) of each operand over the contiguous output `shape`.
template <class T>
void binary_same(BinaryOp op, const T* a, const T* b, T* out, int64_t n);
template <class T>
void binary_rows(BinaryOp op, const T* a, const T* b, T* out, int64_t rows, int64_t cols);
// The strided kernels take the shape and strides by value: at most this many dimensions.
inline constexpr int64_t max_broadcast_rank = 16;
template <class T>
void binary_strided(BinaryOp op, const T* a, const int64_t* a_strides, const T* b, const int64_t* b_strides, T* out,
                    const int64_t* shape, int64_t rank);

// Backward: dst (=|+=) the gradient of operand `side`; g is the output gradient; a and b may be
// null for add and sub (which read only g). Every element of dst is written in overwrite mode.
template <class T>
void binary_grad_same(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t n,
                      bool overwrite);
// Layout of binary_rows, the full-size operand ([rows, cols]).
template <class T>
void binary_grad_rows_full(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t rows,
                           int64_t cols, bool overwrite);
// Layout of binary_rows, the repeated operand ([cols]): column sums of the partials.
template <class T>
void binary_grad_rows_reduced(BinaryOp op, Operand side, const T* g, const T* a, const T* b, T* dst, int64_t rows,
                              int64_t cols, bool overwrite);
// Layout of binary_strided: the operand whose shape, left-padded with 1s to `rank`, is
// `target_shape`; each of its elements sums the partials of the output positions broadcast onto it.
template <class T>
void binary_grad_strided(BinaryOp op, Operand side, const T* g, const T* a, const int64_t* a_strides, const T* b,
                         const int64_t* b_strides, const int64_t* shape, const int64_t* target_shape, int64_t rank,
                         T* dst, bool overwrite);

}  // namespace mcdl::cuda
