// Helpers every op uses: calling a templated kernel for a tensor's dtype, and the common
// argument checks with messages that name the op and the shapes.
#pragma once
#include "engine/tensor.h"

namespace mcdl {

// Calls f(T{}) with T = float or double for the dtype; other dtypes are an error.
template <class F>
void dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::f32: f(float{}); return;
    case DType::f64: f(double{}); return;
    default: fail(op, ": expected an f32 or f64 tensor, got ", dtype_name(dtype));
  }
}

// Calls f(T{}) for every dtype (bf16 as the mcdl::bf16 storage struct).
template <class F>
void dispatch_any(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f(float{}); return;
    case DType::f64: f(double{}); return;
    case DType::bf16: f(bf16{}); return;
    case DType::i32: f(int32_t{}); return;
    case DType::i64: f(int64_t{}); return;
    case DType::u8: f(uint8_t{}); return;
  }
}

void check_defined(const char* op, const Tensor& t, const char* name = "input");
// Same dtype and device for every tensor of an op.
void check_same_dtype_device(const char* op, const Tensor& a, const Tensor& b);
void check_floating(const char* op, const Tensor& t);
// Maps a possibly negative axis into [0, rank) or throws.
int64_t normalize_axis(const char* op, int64_t axis, int64_t rank);

}  // namespace mcdl
