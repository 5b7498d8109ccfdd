// Parity of the CUDA backend with the CPU reference, through the public tensor API: the same
// op on CPU tensors and on CUDA tensors (emulated in mcdl_tests, real in mcdl_tests_gpu),
// forward and backward, with every fresh buffer poisoned with NaN, at the kernels' preferred
// block size and at 64 threads, and, in the emulator, with the threads of each block run in
// forward, reverse and shuffled order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/settings.h"
#include "kernels/emu/thread_order.h"
#include "tests/gradcheck.h"

namespace mcdl::testing {

// A random input that requires grad: values in [-1, 1), or in [low, high).
Tensor leaf(const Shape& shape, uint64_t seed, DType dtype = DType::f32);
Tensor leaf(const Shape& shape, uint64_t seed, double low, double high, DType dtype = DType::f32);

// Values that exercise every bit pattern class of the dtype: signed values for the signed
// types, the full byte range for u8.
Tensor values_of(DType dtype, const Shape& shape, uint64_t seed);

// Every dtype, for the ops that move data without arithmetic.
inline constexpr DType all_dtypes[] = {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::u8};

// "op [rows, cols]", a check's label.
std::string shape_label(const std::string& op, int64_t rows, int64_t cols);

// The current settings with a block size forced on every kernel (0: each kernel's own) and fresh
// buffers NaN-poisoned (so an unwritten element shows), for a ScopedEngineSettings around a run
// on the device.
EngineSettings device_run_settings(unsigned block);

// |ref − got| ≤ atol + rtol·|ref| for every element (NaN never passes).
void check_close(const std::string& what, const Tensor& reference, const Tensor& got, double atol, double rtol);

// Runs f on the inputs on the CPU and on the CUDA device (copies of the same values; inputs
// with requires_grad get gradients on both), seeds backward with the same random output
// gradient, and compares the output and every input gradient. The CUDA run happens once per
// emulator thread order. Integer inputs (targets, indices, masks) are copied unchanged.
void check_cuda_parity(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs,
                       double atol = 1e-5, double rtol = 1e-5);

// Forward only, for ops without a gradient (argmax, integer ops).
void check_cuda_forward_parity(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs,
                               double atol = 0, double rtol = 0);

}  // namespace mcdl::testing
