// Shared test helpers: random inputs, finite-difference gradient checks in double, float vs
// double agreement, and the backward contract (accumulate into .grad, write every element).
#pragma once
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/tensor.h"

namespace mcdl::testing {

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Uniform values in [low, high) from a fixed seed (tests only; not the engine's generator).
Tensor random_tensor(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0,
                     DType dtype = DType::f64);

// The gradient check of the issue: L = <f(x), G> with a fixed random G; central differences
// with h = 1e-6·max(1, |x|); pass when |analytic − numeric| ≤ atol + rtol·|numeric|.
// Checks every element of every input that has requires_grad set (inputs must be f64).
void check_gradients(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs,
                     double atol = 1e-6, double rtol = 1e-4, uint64_t seed = 1234);

// f on f32 copies of the inputs agrees with f on the f64 inputs within |Δ| ≤ tol·(1 + |ref|),
// forward and gradients.
void check_float_matches_double(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs,
                                double tol = 1e-4, uint64_t seed = 99);

// Backward adds into a pre-filled .grad, and a fresh gradient buffer (poisoned with NaN) is
// written in every element.
void check_backward_contract(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs,
                             uint64_t seed = 4321);

// All three checks above, the usual set for one differentiable op.
void check_op(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs, double atol = 1e-6,
              double rtol = 1e-4, double float_tol = 1e-4);

// Largest |a − b| over all elements (same shape required).
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace mcdl::testing
