#include "tests/cuda/parity.h"

#include <cmath>

#include "kernels/emu/thread_order.h"

namespace mcdl::testing {
namespace {

std::vector<Tensor> copies_on(const std::vector<Tensor>& inputs, Device device) {
  std::vector<Tensor> copies;
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      copies.push_back(t);
      continue;
    }
    Tensor c = t.detach().to(device);
    if (c.storage() == t.storage()) c = c.clone();  // never share a leaf with the other run
    if (t.requires_grad()) c.set_requires_grad(true);
    copies.push_back(c);
  }
  return copies;
}

// Each kernel runs at its preferred block size and at 64 threads (a size no kernel prefers, so
// partial blocks and multi-block rows are exercised).
constexpr unsigned parity_block_sizes[] = {0, 64};

struct Run {
  Tensor output;
  std::vector<Tensor> grads;
};

Run run_on(Device device, const TensorFn& f, const std::vector<Tensor>& inputs, const Tensor& projection,
           bool backward) {
  std::vector<Tensor> xs = copies_on(inputs, device);
  Run run;
  run.output = f(xs);
  if (backward) {
    run_backward(run.output, projection.to(run.output.dtype()).to(device), false);
    for (const Tensor& x : xs) run.grads.push_back(x.defined() && x.requires_grad() ? x.grad() : Tensor());
  }
  return run;
}

void check_parity(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs, double atol,
                  double rtol, bool backward) {
  Tensor projection;
  Run reference;
  {
    reference = run_on(Device::cpu(), f, inputs, Tensor(), false);
    projection = random_tensor(reference.output.shape(), 2024);
    if (backward) reference = run_on(Device::cpu(), f, inputs, projection, true);
  }
  for (unsigned block : parity_block_sizes) emu::for_each_thread_order([&](emu::ThreadOrder order) {
    const std::string label = name + " (" + emu::to_string(order) + " thread order, block size " +
                              (block ? std::to_string(block) : std::string("default")) + ")";
    Run got;
    {
      const ScopedEngineSettings settings(device_run_settings(block));
      got = run_on(Device::cuda(), f, inputs, projection, backward);
    }
    REQUIRE_MESSAGE(got.output.device().is_cuda(), label << ": the output left the device: " << got.output.str());
    check_close(label + " output", reference.output, got.output, atol, rtol);
    for (size_t i = 0; i < reference.grads.size(); ++i) {
      if (!reference.grads[i].defined()) continue;
      REQUIRE_MESSAGE(got.grads[i].defined(), label << ": no gradient for input " << i);
      check_close(label + " grad" + std::to_string(i), reference.grads[i], got.grads[i], atol, rtol);
    }
  });
}

}  // namespace

Tensor leaf(const Shape& shape, uint64_t seed, DType dtype) { return leaf(shape, seed, -1, 1, dtype); }

Tensor leaf(const Shape& shape, uint64_t seed, double low, double high, DType dtype) {
  return random_tensor(shape, seed, low, high, dtype).set_requires_grad(true);
}

Tensor values_of(DType dtype, const Shape& shape, uint64_t seed) {
  return dtype == DType::u8 ? random_tensor(shape, seed, 0, 256, DType::f64).to(dtype)
                            : random_tensor(shape, seed, -1000, 1000, DType::f64).to(dtype);
}

std::string shape_label(const std::string& op, int64_t rows, int64_t cols) {
  return op + " [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

EngineSettings device_run_settings(unsigned block) {
  EngineSettings settings = engine_settings();
  settings.block_size_override = block;
  settings.poison_new_storage = true;
  return settings;
}

void check_close(const std::string& what, const Tensor& reference, const Tensor& got, double atol, double rtol) {
  REQUIRE_MESSAGE(reference.shape() == got.shape(), what << ": shape " << got.str() << " vs " << reference.str());
  REQUIRE_MESSAGE(reference.dtype() == got.dtype(), what << ": dtype " << got.str() << " vs " << reference.str());
  const auto r = reference.to(Device::cpu()).to_vector<double>();
  const auto g = got.to(Device::cpu()).to_vector<double>();
  int reported = 0;
  for (size_t i = 0; i < r.size() && reported < 5; ++i) {
    if (!(std::fabs(r[i] - g[i]) <= atol + rtol * std::fabs(r[i]))) {
      ++reported;
      FAIL_CHECK(what << "[" << i << "]: cpu " << r[i] << " vs cuda " << g[i]);
    }
  }
}

void check_cuda_parity(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs, double atol,
                       double rtol) {
  check_parity(name, f, inputs, atol, rtol, true);
}

void check_cuda_forward_parity(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs,
                               double atol, double rtol) {
  check_parity(name, f, inputs, atol, rtol, false);
}

}  // namespace mcdl::testing
