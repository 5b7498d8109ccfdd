// The names of the element-wise ops, as the CPU and CUDA kernels of elementwise.h take them
// (each backend turns a name into its own functor: kernels/cpu/elementwise.h holds the host
// formulas, kernels/cuda/elementwise.cu the device ones).
#pragma once

namespace mcdl {

// The unary ops and tensor-scalar forms (Neg ... RDivScalar in kernels/cpu/elementwise.h).
enum class UnaryOp {
  neg, exp, log, sqrt, pow,
  add_scalar, sub_scalar, rsub_scalar, mul_scalar, div_scalar, rdiv_scalar,
};
struct UnaryFn {
  UnaryOp op;
  double scalar;  // the exponent of pow, the scalar of the *_scalar forms (rounded to T by the kernels)
};

enum class BinaryOp { add, sub, mul, div };
// Which operand of a binary op a gradient kernel computes.
enum class Operand { x, y };

}  // namespace mcdl
