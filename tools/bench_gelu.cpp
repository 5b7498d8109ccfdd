// Benchmark: the CPU GELU in float (its erf four lanes at a time, kernels/cpu/erf_float.h) against
// the same formula with glibc's scalar erff, on one thread, for the activations of ViT-B/16's MLP
// at batch 16 ([16·197, 3072]) drawn at three scales (most GELU inputs are small, where erff is
// cheapest and the vector erf needs one polynomial). Prints nanoseconds per element, median of 7.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>
#include <vector>

#include "engine/ops/nn.h"
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
  return 0;
}
