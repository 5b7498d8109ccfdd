// Benchmark: the engine's linear layer (forward, and backward through autodiff) against a
// bare cblas_sgemm of the same shapes, for the four linear layers of ViT-B/16 at batch 16.
// Prints achieved GFLOP/s and the engine/raw ratio; the engine's overhead budget is 10%.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "engine/autograd.h"
#include "engine/ops/linalg.h"
#include "engine/random.h"
#include "kernels/cpu/gemm.h"

using namespace mcdl;

namespace {

double median_seconds(int repeats, const std::function<void()>& setup, const std::function<void()>& timed) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    setup();
    const auto start = std::chrono::steady_clock::now();
    timed();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Shape2 {
  const char* name;
  int64_t in, out;
};

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const int64_t tokens = 16 * 197;  // batch 16 of ViT-B/16 sequences
  const Shape2 layers[] = {{"qkv 768->2304", 768, 2304},
                           {"proj 768->768", 768, 768},
                           {"fc1 768->3072", 768, 3072},
                           {"fc2 3072->768", 3072, 768}};
  std::printf("linear layers of ViT-B/16, M = %lld tokens, f32, median of %d runs, OpenBLAS %s\n",
              static_cast<long long>(tokens), repeats, mcdl::cpu::openblas_core().c_str());
  std::printf("%-16s %-9s %12s %12s %9s\n", "layer", "pass", "engine GF/s", "sgemm GF/s", "ratio");
  double worst = 1e9;
  for (const Shape2& layer : layers) {
    const int64_t m = tokens, k = layer.in, n = layer.out;
    RandomStream stream(1, stream_id("bench_linear", {k, n}));
    Tensor x = rand_uniform({m, k}, DType::f32, stream, -1, 1);
    Tensor w = rand_uniform({n, k}, DType::f32, stream, -0.03, 0.03);
    Tensor b = rand_uniform({n}, DType::f32, stream, -0.1, 0.1);
    Tensor g = rand_uniform({m, n}, DType::f32, stream, -1, 1);
    std::vector<float> c(static_cast<size_t>(m * n)), dx(static_cast<size_t>(m * k)), dw(static_cast<size_t>(n * k));
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);

    const double raw_fwd = median_seconds(repeats, [] {}, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, x.data<float>(), k, w.data<float>(), k,
                  0.f, c.data(), n);
    });
    const double engine_fwd = median_seconds(repeats, [] {}, [&] {
      NoGradGuard no_grad;
      Tensor y = linear(x, w, b);
    });
    const double raw_bwd = median_seconds(repeats, [] {}, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, k, n, 1.f, g.data<float>(), n, w.data<float>(), k,
                  0.f, dx.data(), k);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, k, m, 1.f, g.data<float>(), n, x.data<float>(), k,
                  0.f, dw.data(), k);
    });
    Tensor xg = x.detach().set_requires_grad(true), wg = w.detach().set_requires_grad(true),
           bg = b.detach().set_requires_grad(true);
    Tensor y;
    const double engine_bwd = median_seconds(
        repeats,
        [&] {
          xg.zero_grad(), wg.zero_grad(), bg.zero_grad();
          y = linear(xg, wg, bg);
        },
        [&] { run_backward(y, g, false); });

    const double fwd_ratio = raw_fwd / engine_fwd, bwd_ratio = raw_bwd / engine_bwd;
    worst = std::min({worst, fwd_ratio, bwd_ratio});
    std::printf("%-16s %-9s %12.1f %12.1f %8.3f\n", layer.name, "forward", flops / engine_fwd * 1e-9,
                flops / raw_fwd * 1e-9, fwd_ratio);
    std::printf("%-16s %-9s %12.1f %12.1f %8.3f\n", layer.name, "backward", 2 * flops / engine_bwd * 1e-9,
                2 * flops / raw_bwd * 1e-9, bwd_ratio);
  }
  std::printf("ratio = engine throughput / bare sgemm throughput (1.0 = no overhead); worst %.3f -> %s\n", worst,
              worst >= 0.9 ? "within the 10% budget" : "OVER the 10% overhead budget");
  return 0;
}
