#include "engine/dispatch.h"

namespace mcdl {

void check_defined(const char* op, const Tensor& t, const char* name) {
  check(t.defined(), op, ": ", name, " is an undefined tensor");
}

void check_same_dtype_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  check(a.dtype() == b.dtype(), op, ": dtype mismatch between ", a, " and ", b);
  check(a.device() == b.device(), op, ": device mismatch between ", a, " and ", b);
}

void check_floating(const char* op, const Tensor& t) {
  check_defined(op, t);
  check(t.dtype() == DType::f32 || t.dtype() == DType::f64, op, ": expected an f32 or f64 tensor, got ",
        t);
}

int64_t normalize_axis(const char* op, int64_t axis, int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  check(normalized >= 0 && normalized < rank, op, ": axis ", axis, " is out of range for a tensor of rank ",
        rank);
  return normalized;
}

}  // namespace mcdl
