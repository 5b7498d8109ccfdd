// Element-wise ops on f32 / f64 tensors, differentiable: binary arithmetic with NumPy /
// PyTorch broadcasting, tensor-scalar forms, and unary math.
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// The broadcast result of two shapes: trailing dimensions are aligned, and a missing or
// size-1 dimension takes the other's size. Throws "<op>: cannot broadcast ..." otherwise.
Shape broadcast_shape(const char* op, const Shape& a, const Shape& b);

// a ∘ b with broadcasting; a and b must have the same dtype and device.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);

// Tensor-scalar forms (the scalar is rounded to the tensor's dtype).
Tensor add(const Tensor& a, double s);
Tensor sub(const Tensor& a, double s);
Tensor rsub(double s, const Tensor& a);  // s - a
Tensor mul(const Tensor& a, double s);
Tensor div(const Tensor& a, double s);
Tensor rdiv(double s, const Tensor& a);  // s / a

Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor pow(const Tensor& a, double exponent);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return sub(a, s); }
inline Tensor operator-(double s, const Tensor& a) { return rsub(s, a); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return div(a, s); }
inline Tensor operator/(double s, const Tensor& a) { return rdiv(s, a); }

// x broadcast to `shape` (PyTorch's x.expand(shape), materialised): one broadcast kernel however
// many copies, where concatenating n references to x runs n copies; the gradient sums over the
// broadcast axes. The values are x's (a −0 comes out as +0).
Tensor expand(const Tensor& x, const Shape& shape);

}  // namespace mcdl
