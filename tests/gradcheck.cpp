#include "tests/gradcheck.h"

#include <cmath>
#include <random>
#include <utility>

#include "engine/settings.h"

namespace mcdl::testing {
namespace {

double projected_loss(const Tensor& out, const Tensor& projection) {
  const auto y = out.to_vector<double>();
  const auto g = projection.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * g[i];
  return s;
}

std::vector<Tensor> fresh_inputs(const std::vector<Tensor>& inputs, DType dtype) {
  std::vector<Tensor> copies;
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      copies.push_back(t);
      continue;
    }
    Tensor c = (is_floating(t.dtype()) ? t.to(dtype) : t).clone();
    if (t.requires_grad()) c.set_requires_grad(true);
    copies.push_back(c);
  }
  return copies;
}

// Runs f and backward with the output gradient G; returns the output.
Tensor forward_backward(const TensorFn& f, const std::vector<Tensor>& inputs, const Tensor& projection) {
  Tensor out = f(inputs);
  run_backward(out, projection.to(out.dtype()), false);
  return out;
}

// The fixed random G of L = <f(x), G>, shaped like f's output.
Tensor projection_for(const TensorFn& f, const std::vector<Tensor>& inputs, uint64_t seed) {
  NoGradGuard no_grad;
  return random_tensor(f(inputs).shape(), seed);
}

}  // namespace

Tensor random_tensor(const Shape& shape, uint64_t seed, double low, double high, DType dtype) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = uniform(engine);
  return from_vector(values, shape).to(dtype);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

void check_gradients(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs, double atol,
                     double rtol, uint64_t seed) {
  std::vector<Tensor> xs = fresh_inputs(inputs, DType::f64);
  const Tensor projection = projection_for(f, xs, seed);
  forward_backward(f, xs, projection);
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined() || !xs[i].requires_grad()) continue;
    REQUIRE_MESSAGE(xs[i].grad().defined(), name << ": input " << i << " received no gradient");
    const auto analytic = xs[i].grad().to_vector<double>();
    int failures = 0;
    for (int64_t j = 0; j < xs[i].numel() && failures < 5; ++j) {
      // Every write through a fresh data() pointer, so that Storage::writes counts it: a layer's
      // kept copy of an input (a resized position table, a bf16 weight) then sees the change.
      auto set = [&](double value) { xs[i].data<double>()[j] = value; };
      const double saved = std::as_const(xs[i]).data<double>()[j];
      const double h = 1e-6 * std::max(1.0, std::fabs(saved));
      double plus, minus;
      {
        NoGradGuard no_grad;
        set(saved + h);
        plus = projected_loss(f(xs), projection);
        set(saved - h);
        minus = projected_loss(f(xs), projection);
        set(saved);
      }
      const double numeric = (plus - minus) / (2 * h);
      const double error = std::fabs(analytic[static_cast<size_t>(j)] - numeric);
      if (error > atol + rtol * std::fabs(numeric)) {
        ++failures;
        FAIL_CHECK(name << ": d/dinput" << i << "[" << j << "] analytic " << analytic[static_cast<size_t>(j)]
                        << " vs numeric " << numeric);
      }
    }
  }
}

void check_float_matches_double(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs,
                                double tol, uint64_t seed) {
  std::vector<Tensor> xd = fresh_inputs(inputs, DType::f64);
  std::vector<Tensor> xf = fresh_inputs(inputs, DType::f32);
  const Tensor projection = projection_for(f, xd, seed);
  const Tensor yd = forward_backward(f, xd, projection);
  const Tensor yf = forward_backward(f, xf, projection);
  CHECK_MESSAGE(yf.dtype() == DType::f32, name << ": f32 inputs gave " << yf.str());
  auto compare = [&](const Tensor& ref, const Tensor& got, const std::string& what) {
    const auto r = ref.to_vector<double>(), g = got.to_vector<double>();
    REQUIRE(r.size() == g.size());
    for (size_t j = 0; j < r.size(); ++j) {
      if (std::fabs(r[j] - g[j]) > tol * (1 + std::fabs(r[j]))) {
        FAIL_CHECK(name << ": " << what << "[" << j << "] f64 " << r[j] << " vs f32 " << g[j]);
        return;
      }
    }
  };
  compare(yd, yf, "output");
  for (size_t i = 0; i < xd.size(); ++i)
    if (xd[i].defined() && xd[i].requires_grad()) compare(xd[i].grad(), xf[i].grad(), "grad" + std::to_string(i));
}

void check_backward_contract(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs,
                             uint64_t seed) {
  // Reference gradients from a clean run.
  std::vector<Tensor> clean = fresh_inputs(inputs, DType::f64);
  const Tensor projection = projection_for(f, clean, seed);
  forward_backward(f, clean, projection);

  // Fresh buffers poisoned with NaN must come back fully written.
  std::vector<Tensor> poisoned;
  {
    const ScopedEngineSettings poison(&EngineSettings::poison_new_storage, true);
    poisoned = fresh_inputs(inputs, DType::f64);
    forward_backward(f, poisoned, projection);
  }

  // Pre-filled .grad must be added to, not replaced.
  std::vector<Tensor> prefilled = fresh_inputs(inputs, DType::f64);
  std::vector<Tensor> prefill(inputs.size());
  for (size_t i = 0; i < prefilled.size(); ++i) {
    if (!prefilled[i].defined() || !prefilled[i].requires_grad()) continue;
    prefill[i] = random_tensor(prefilled[i].shape(), seed + 17 + i);
    prefilled[i].set_grad(prefill[i].clone());
  }
  forward_backward(f, prefilled, projection);

  for (size_t i = 0; i < clean.size(); ++i) {
    if (!clean[i].defined() || !clean[i].requires_grad()) continue;
    const auto ref = clean[i].grad().to_vector<double>();
    const auto fresh = poisoned[i].grad().to_vector<double>();
    const auto summed = prefilled[i].grad().to_vector<double>();
    const auto base = prefill[i].to_vector<double>();
    for (size_t j = 0; j < ref.size(); ++j) {
      if (!(std::fabs(fresh[j] - ref[j]) <= 1e-12 * (1 + std::fabs(ref[j])))) {
        FAIL_CHECK(name << ": fresh gradient of input " << i << " element " << j << " is " << fresh[j]
                        << " (expected " << ref[j] << "; NaN means it was never written)");
        break;
      }
      if (!(std::fabs(summed[j] - (base[j] + ref[j])) <= 1e-12 * (1 + std::fabs(ref[j])))) {
        FAIL_CHECK(name << ": backward did not accumulate into input " << i << " element " << j << ": got "
                        << summed[j] << ", expected " << base[j] + ref[j]);
        break;
      }
    }
  }
}

void check_op(const std::string& name, const TensorFn& f, const std::vector<Tensor>& inputs, double atol,
              double rtol, double float_tol) {
  check_gradients(name, f, inputs, atol, rtol);
  check_float_matches_double(name, f, inputs, float_tol);
  check_backward_contract(name, f, inputs);
}

}  // namespace mcdl::testing
