// Benchmark: the CPU GELU in float (its erf four lanes at a time, kernels/cpu/erf_float.h) against
// the same formula with glibc's scalar erff, on one thread, for the activations of ViT-B/16's MLP
// at batch 16 ([16·197, 3072]) drawn at three scales (most GELU inputs are small, where erff is
// cheapest and the vector erf needs one polynomial). Then the bf16 inference path's passes on the
// same shape: the float <-> bf16 array conversions (kernels/cpu/bf16_lanes.h) against their
// baseline x86-64 loops. Prints nanoseconds per element, median of 7.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>
#include <vector>

#include "engine/ops/nn.h"
#include "kernels/cpu/bf16_lanes.h"
#include "engine/random.h"

using namespace mcdl;

namespace {

double median_ns_per_element(int64_t n, const std::function<void()>& work) {
  std::vector<double> times;
  for (int r = 0; r < 7; ++r) {
    const auto start = std::chrono::steady_clock::now();
    work();
    times.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
                    static_cast<double>(n));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  omp_set_num_threads(1);
  const int64_t rows = 16 * 197, cols = 3072, n = rows * cols;
  std::printf("GELU forward, f32 [%lld, %lld], one thread, ns per element (median of 7)\n",
              static_cast<long long>(rows), static_cast<long long>(cols));
  std::printf("%-12s %14s %16s %8s\n", "inputs", "engine", "scalar erff", "ratio");
  for (const double scale : {0.3, 1.0, 3.0}) {
    RandomStream stream(7, 1);
    const Tensor x = rand_normal({rows, cols}, DType::f32, stream, 0.0, scale);
    Tensor y;
    const double engine = median_ns_per_element(n, [&] { y = gelu(x); });
    std::vector<float> reference(static_cast<size_t>(n));
    const float* in = x.data<float>();
    constexpr float inv_sqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);
    const double scalar = median_ns_per_element(n, [&] {
      for (int64_t i = 0; i < n; ++i) reference[static_cast<size_t>(i)] = 0.5f * in[i] * (1.0f + std::erf(in[i] * inv_sqrt2));
    });
    std::printf("N(0, %.1f)%4s %14.2f %16.2f %8.2f\n", scale, "", engine, scalar, scalar / engine);
  }

  // The bf16 path, N(0, 1) inputs.
  RandomStream stream(7, 2);
  const Tensor x = rand_normal({rows, cols}, DType::f32, stream, 0.0, 1.0);
  // The length as the tensor's (not the constant rows·cols, whose folding into the loops' tails
  // trips GCC's -Waggressive-loop-optimizations).
  const int64_t count = x.numel();
  std::vector<float> floats(static_cast<size_t>(count));
  std::vector<bf16> halves(static_cast<size_t>(count)), out(static_cast<size_t>(count));
  cpu::round_to_bf16(x.data<float>(), halves.data(), count);
  std::printf("\nbf16 [%lld, %lld], one thread, ns per element (median of 7)\n", static_cast<long long>(rows),
              static_cast<long long>(cols));
  std::printf("%-34s %10s %12s %8s\n", "pass", "engine", "alternative", "ratio");
  auto row = [&](const char* name, double engine, double alternative) {
    std::printf("%-34s %10.2f %12.2f %8.2f\n", name, engine, alternative, alternative / engine);
  };
  row("round to bf16: engine / baseline",
      median_ns_per_element(count, [&] { cpu::round_to_bf16(x.data<float>(), out.data(), count); }),
      median_ns_per_element(count, [&] { cpu::detail::round_to_bf16_lanes(x.data<float>(), out.data(), count); }));
  row("widen bf16: engine / baseline", median_ns_per_element(count, [&] { cpu::widen_bf16(halves.data(), floats.data(), count); }),
      median_ns_per_element(count, [&] { cpu::detail::widen_bf16_lanes(halves.data(), floats.data(), count); }));
  return 0;
}
