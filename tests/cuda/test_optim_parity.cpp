// The fused SGD, AdamW and EMA updates on the device: the same steps on CPU parameters and on CUDA
// parameters (two groups, a parameter that never has a gradient, one skipped for a step) give
// the same parameters and state; the state stays on the device and its state dict round-trips,
// on the device and across devices.
#include <doctest/doctest.h>

#include <functional>
#include <memory>

#include "engine/optim/adamw.h"
#include "engine/optim/ema.h"
#include "engine/optim/sgd.h"
#include "tests/cuda/parity.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

using OptimizerFactory = std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup>)>;

constexpr int steps = 3;

// Shapes that do not divide any block size; "frozen" never has a gradient.
struct Model {
  Tensor w, v, b, frozen;
};

Model make_model(DType dtype, Device device) {
  auto param = [&](const Shape& shape, uint64_t seed) {
    return random_tensor(shape, seed, -1.0, 1.0, dtype).to(device).clone().set_requires_grad(true);
  };
  return {param({3, 197}, 1), param({1}, 2), param({197}, 3), param({3}, 4)};
}

std::vector<ParamGroup> groups_of(const Model& m) {
  return {{"decay", {{"layer.w", m.w}, {"layer.v", m.v}}, 0.05, 0.1},
          {"no_decay", {{"layer.b", m.b}, {"layer.frozen", m.frozen}}, 0.02, 0.0}};
}

// Gradients of step s (the same values on both devices); "layer.b" has none at step 1, so its
// AdamW step count falls behind the others'.
void set_gradients(Model& m, int s) {
  auto grad = [&](const Tensor& p, uint64_t seed) {
    return random_tensor(p.shape(), 100 + 10 * static_cast<uint64_t>(s) + seed, -1.0, 1.0, p.dtype()).to(p.device());
  };
  m.w.set_grad(grad(m.w, 1));
  m.v.set_grad(grad(m.v, 2));
  if (s == 1) {
    m.b.zero_grad();
  } else {
    m.b.set_grad(grad(m.b, 3));
  }
}

// The trained parameters of `from`, copied to `device` as fresh leaves ("frozen" stays new).
Model copy_trained(const Model& from, Device device) {
  Model to = make_model(from.w.dtype(), device);
  auto copy = [&](const Tensor& t) { return t.detach().to(device).clone().set_requires_grad(true); };
  to.w = copy(from.w);
  to.v = copy(from.v);
  to.b = copy(from.b);
  return to;
}

void run_steps(Optimizer& optimizer, Model& m, int first, int count) {
  for (int s = first; s < first + count; ++s) {
    set_gradients(m, s);
    optimizer.step();
  }
}

double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-6 : 1e-12; }

void check_same(const std::string& label, const Model& cpu, const Model& cuda, const StateDict& cpu_state,
                const StateDict& cuda_state, DType dtype) {
  const double tol = tolerance(dtype);
  check_close(label + " w", cpu.w, cuda.w, tol, tol);
  check_close(label + " v", cpu.v, cuda.v, tol, tol);
  check_close(label + " b", cpu.b, cuda.b, tol, tol);
  CHECK(cuda.frozen.to_vector<double>() == cpu.frozen.to_vector<double>());  // untouched
  REQUIRE(cuda_state.size() == cpu_state.size());
  for (const auto& [key, reference] : cpu_state) {
    REQUIRE_MESSAGE(cuda_state.count(key) == 1, label << ": no state entry " << key);
    const Tensor& got = cuda_state.at(key);
    CHECK_MESSAGE(got.device().is_cuda(), label << ": state entry " << key << " is " << got.str());
    check_close(label + " " + key, reference, got, tol, tol);
  }
}

// The steps on the CPU, then on the device under every emulator thread order at the preferred
// block size and at 64 threads.
void check_optimizer_parity(const std::string& name, const OptimizerFactory& make, DType dtype) {
  Model cpu = make_model(dtype, Device::cpu());
  std::unique_ptr<Optimizer> cpu_optimizer = make(groups_of(cpu));
  run_steps(*cpu_optimizer, cpu, 0, steps);
  for (const auto& [key, tensor] : cpu_optimizer->state()) CHECK_MESSAGE(!key.ends_with(".frozen"), key);
  for (unsigned block : {0u, 64u}) emu::for_each_thread_order([&](emu::ThreadOrder order) {
    const std::string label = name + " " + dtype_name(dtype) + " (" + emu::to_string(order) + " order, block " +
                              std::to_string(block) + ")";
    Model device = make_model(dtype, Device::cuda());
    std::unique_ptr<Optimizer> optimizer = make(groups_of(device));
    {
      const ScopedEngineSettings settings(device_run_settings(block));
      run_steps(*optimizer, device, 0, steps);
    }
    check_same(label, cpu, device, cpu_optimizer->state(), optimizer->state(), dtype);
  });
}

// State dicts: a CUDA optimizer's state dict lives on the device and resumes the same
// trajectory; a CPU state dict loads into a CUDA optimizer (and back) and continues as the CPU.
void check_state_dict_round_trip(const std::string& name, const OptimizerFactory& make, DType dtype) {
  CAPTURE(name);
  Model cpu = make_model(dtype, Device::cpu()), device = make_model(dtype, Device::cuda());
  std::unique_ptr<Optimizer> cpu_optimizer = make(groups_of(cpu)), device_optimizer = make(groups_of(device));
  run_steps(*cpu_optimizer, cpu, 0, 2);
  run_steps(*device_optimizer, device, 0, 2);

  const StateDict saved = device_optimizer->state_dict();
  REQUIRE(!saved.empty());
  for (const auto& [key, tensor] : saved) CHECK_MESSAGE(tensor.device().is_cuda(), key << " is " << tensor.str());

  // Same device: a resumed copy is bit for bit the original.
  Model resumed = copy_trained(device, Device::cuda());
  std::unique_ptr<Optimizer> resumed_optimizer = make(groups_of(resumed));
  resumed_optimizer->load_state_dict(saved);

  // Across devices: the CPU's state continues on CUDA parameters, the device's on CPU ones.
  Model cpu_to_device = copy_trained(cpu, Device::cuda()), device_to_cpu = copy_trained(device, Device::cpu());
  std::unique_ptr<Optimizer> cpu_to_device_optimizer = make(groups_of(cpu_to_device));
  cpu_to_device_optimizer->load_state_dict(cpu_optimizer->state_dict());
  std::unique_ptr<Optimizer> device_to_cpu_optimizer = make(groups_of(device_to_cpu));
  device_to_cpu_optimizer->load_state_dict(saved);
  for (const auto& [key, tensor] : cpu_to_device_optimizer->state()) CHECK(tensor.device().is_cuda());
  for (const auto& [key, tensor] : device_to_cpu_optimizer->state()) CHECK(tensor.device().is_cpu());

  run_steps(*cpu_optimizer, cpu, 2, 1);
  run_steps(*device_optimizer, device, 2, 1);
  run_steps(*resumed_optimizer, resumed, 2, 1);
  run_steps(*cpu_to_device_optimizer, cpu_to_device, 2, 1);
  run_steps(*device_to_cpu_optimizer, device_to_cpu, 2, 1);

  CHECK(device.w.to_vector<double>() == resumed.w.to_vector<double>());
  CHECK(device.v.to_vector<double>() == resumed.v.to_vector<double>());
  CHECK(device.b.to_vector<double>() == resumed.b.to_vector<double>());
  for (const auto& [key, tensor] : device_optimizer->state())
    CHECK_MESSAGE(tensor.to_vector<double>() == resumed_optimizer->state().at(key).to_vector<double>(), key);
  // The saved copies did not move with the later steps.
  for (const auto& [key, tensor] : saved)
    if (key.starts_with("step.")) CHECK(tensor.item() <= 2);
  check_same(name + " cpu state on cuda", cpu, cpu_to_device, cpu_optimizer->state(), cpu_to_device_optimizer->state(),
             dtype);
  const double tol = tolerance(dtype);
  check_close(name + " cuda state on cpu w", cpu.w, device_to_cpu.w, tol, tol);
  check_close(name + " cuda state on cpu v", cpu.v, device_to_cpu.v, tol, tol);
  check_close(name + " cuda state on cpu b", cpu.b, device_to_cpu.b, tol, tol);
}

OptimizerFactory sgd(SgdOptions options) {
  return [options](std::vector<ParamGroup> groups) { return std::make_unique<Sgd>(std::move(groups), options); };
}

OptimizerFactory adamw(AdamWOptions options = {}) {
  return [options](std::vector<ParamGroup> groups) { return std::make_unique<AdamW>(std::move(groups), options); };
}

}  // namespace

// Tolerances: f32 1e-6 (absolute and relative; the emulator matches the CPU exactly, a GPU may
// contract multiply-adds into FMAs and differ in the last bits), f64 1e-12.
TEST_CASE("cuda optim: SGD steps match the CPU (plain, momentum with weight decay, Nesterov)") {
  check_optimizer_parity("SGD plain", sgd({}), DType::f32);
  check_optimizer_parity("SGD momentum", sgd({0.9, false}), DType::f32);
  check_optimizer_parity("SGD nesterov", sgd({0.9, true}), DType::f32);
  check_optimizer_parity("SGD nesterov", sgd({0.9, true}), DType::f64);
}

TEST_CASE("cuda optim: AdamW steps match the CPU, per-parameter step counts included") {
  check_optimizer_parity("AdamW", adamw(), DType::f32);
  check_optimizer_parity("AdamW", adamw({0.8, 0.95, 1e-6}), DType::f64);
}

TEST_CASE("cuda optim: state dicts round-trip on the device and across devices") {
  check_state_dict_round_trip("SGD", sgd({0.9, true}), DType::f32);
  check_state_dict_round_trip("AdamW", adamw(), DType::f32);
  check_state_dict_round_trip("AdamW", adamw(), DType::f64);
}

TEST_CASE("cuda optim: the EMA update matches the CPU (f32 and f64, a length no block size divides)") {
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor average = leaf({3, 197}, 7, -1.0, 1.0, dtype).detach(), live = leaf({3, 197}, 8, -1.0, 1.0, dtype).detach();
    const Tensor cpu_average = average.clone(), cuda_average = average.to(Device::cuda()).clone();
    ema_update({{"w", cpu_average}}, {{"w", live}}, 0.99);
    ema_update({{"w", cuda_average}}, {{"w", live.to(Device::cuda())}}, 0.99);
    check_close(std::string("EMA ") + dtype_name(dtype), cpu_average, cuda_average.to(Device::cpu()), 1e-7, 1e-7);
  }
}
