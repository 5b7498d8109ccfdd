// GPU benchmark: each engine op on ViT-B/16 training shapes (batch 128), timed with CUDA
// events, against the device's measured ceilings in the same run: a large device-to-device
// copy for memory-bound ops, a large cuBLAS GEMM for the linear layers. Given a file of
// PyTorch timings of the same ops (tools/bench_torch_gpu.py, "name<TAB>ms" lines), it adds
// PyTorch's time and the engine's speed-up over it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "engine/settings.h"
#include "kernels/cuda/attention_wgmma.h"
#include "kernels/cuda/bf16_inference.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/runtime.h"
#include "layers/block.h"
#include "mcdl/evaluation/kmeans.h"

using namespace mcdl;

namespace {

std::map<std::string, double> torch_ms;  // PyTorch's time per op name, when given

void load_torch_times(const char* path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) torch_ms[line.substr(0, tab)] = std::stod(line.substr(tab + 1));
  }
}

// " | torch 1.234 ms, 1.10x" when PyTorch's time for `key` is known.
std::string torch_column(const std::string& key, double engine_ms) {
  const auto it = torch_ms.find(key);
  if (it == torch_ms.end()) return "";
  char text[64];
  std::snprintf(text, sizeof text, " | torch %8.3f ms, %5.2fx", it->second, it->second / engine_ms);
  return text;
}

double time_ms(const std::function<void()>& work, int repeats = 10) {
  auto call = [](void* context) { (*static_cast<const std::function<void()>*>(context))(); };
  return cuda::time_on_device_ms(call, const_cast<std::function<void()>*>(&work), repeats);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Tensor random_on_device(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  RandomStream stream(seed, stream_id("bench_gpu"));
  return rand_uniform(shape, DType::f32, stream, low, high).to(Device::cuda());
}

double copy_bandwidth_gbs() {
  Tensor big = random_on_device({int64_t(1) << 28}, 1);  // 1 GiB
  const double ms = time_ms([&] { Tensor copy = big.clone(); });
  return 2.0 * static_cast<double>(big.nbytes()) / (ms * 1e6);
}

double gemm_tflops(MatmulPrecision precision) {
  const int64_t n = 8192;
  Tensor a = random_on_device({n, n}, 2), b = random_on_device({n, n}, 3);
  const ScopedEngineSettings scope(&EngineSettings::matmul_precision, precision);
  const double ms = time_ms([&] { Tensor c = matmul(a, b); }, 5);
  return 2.0 * static_cast<double>(n * n * n) / (ms * 1e9);
}

// A memory-bound op: `bytes` is the least traffic it needs (inputs read once, outputs
// written once).
void report_memory_op(const std::string& name, const std::string& shape, double bytes,
                      const std::function<void()>& work, double ceiling_gbs) {
  const double ms = time_ms(work);
  const double gbs = bytes / (ms * 1e6);
  std::printf("%-28s %-18s %9.3f ms %9.1f GB/s %6.1f%% of copy%s\n", name.c_str(), shape.c_str(), ms, gbs,
              100.0 * gbs / ceiling_gbs, torch_column(name, ms).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) load_torch_times(argv[1]);
  if (!cuda::device_available()) {
    std::printf("bench_gpu: no usable CUDA device; nothing to measure.\n");
    return 0;
  }
  std::printf("device: %s\n", cuda::device_description().c_str());
  const double copy_gbs = copy_bandwidth_gbs();
  const double fp32_tflops = gemm_tflops(MatmulPrecision::fp32), tf32_tflops = gemm_tflops(MatmulPrecision::tf32);
  std::printf("ceilings: device copy %.1f GB/s; cuBLAS 8192^3 GEMM %.1f TFLOP/s fp32, %.1f TFLOP/s tf32\n\n",
              copy_gbs, fp32_tflops, tf32_tflops);

  const int64_t tokens = 128 * 197, width = 768;
  const double f = 4.0;  // bytes per f32
  const double activation = static_cast<double>(tokens * width) * f;
  Tensor x = random_on_device({tokens, width}, 4), y = random_on_device({tokens, width}, 5);
  Tensor gamma = random_on_device({width}, 6), beta = random_on_device({width}, 7);
  const std::string act_shape = "[25216, 768]";
  std::printf("%-28s %-18s %12s %14s\n", "op", "shape", "time", "bandwidth");
  report_memory_op("add", act_shape, 3 * activation, [&] { Tensor z = x + y; }, copy_gbs);
  report_memory_op("add bias (rows)", act_shape, 2 * activation, [&] { Tensor z = x + gamma; }, copy_gbs);
  report_memory_op("mul scalar", act_shape, 2 * activation, [&] { Tensor z = x * 0.5; }, copy_gbs);
  report_memory_op("gelu", act_shape, 2 * activation, [&] { Tensor z = gelu(x); }, copy_gbs);
  report_memory_op("layer_norm", act_shape, 2 * activation, [&] { Tensor z = layer_norm(x, gamma, beta, 1e-6); },
                   copy_gbs);
  report_memory_op("l2_normalize", act_shape, 2 * activation, [&] { Tensor z = l2_normalize(x); }, copy_gbs);
  report_memory_op("sum over rows", act_shape, activation, [&] { Tensor z = sum(x, 0); }, copy_gbs);
  report_memory_op("sum all", act_shape, activation, [&] { Tensor z = sum(x); }, copy_gbs);
  report_memory_op("transpose", act_shape, 2 * activation, [&] { Tensor z = transpose(x, 0, 1); }, copy_gbs);
  {
    Tensor scores = random_on_device({128 * 12 * 197, 197}, 8, -5, 5);
    const double bytes = 2.0 * static_cast<double>(scores.nbytes());
    report_memory_op("softmax (attention)", "[302592, 197]", bytes, [&] { Tensor z = softmax(scores); }, copy_gbs);
  }
  {
    Tensor xg = x.detach().set_requires_grad(true), gg = gamma.detach().set_requires_grad(true),
           bg = beta.detach().set_requires_grad(true);
    Tensor out, seed = random_on_device({tokens, width}, 9);
    report_memory_op("layer_norm fwd+bwd", act_shape, 5 * activation, [&] {
      xg.zero_grad(), gg.zero_grad(), bg.zero_grad();
      run_backward(layer_norm(xg, gg, bg, 1e-6), seed, false);
    }, copy_gbs);
    report_memory_op("gelu fwd+bwd", act_shape, 5 * activation, [&] {
      xg.zero_grad();
      run_backward(gelu(xg), seed, false);
    }, copy_gbs);
  }
  {
    Tensor logits = random_on_device({384, 200}, 10, -3, 3);
    std::vector<int64_t> labels(384);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 200);
    Tensor targets = from_vector(labels, {384}).to(Device::cuda());
    report_memory_op("cross_entropy", "[384, 200]", static_cast<double>(logits.nbytes()),
                     [&] { Tensor loss = cross_entropy(logits, targets); }, copy_gbs);
  }

  {
    // The ViT-B/16 patch embedding of a batch (im2col + GEMM).
    Tensor images = random_on_device({128, 3, 224, 224}, 15), weight = random_on_device({768, 3, 16, 16}, 16);
    Tensor bias = random_on_device({768}, 17);
    const double flops = 2.0 * 128 * 196 * 768 * 768;
    std::printf("\n%-28s %-18s %12s %14s\n", "patch embedding", "precision", "time", "throughput");
    for (MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::tf32}) {
      const ScopedEngineSettings scope(&EngineSettings::matmul_precision, precision);
      const double ms = time_ms([&] { Tensor y = conv2d_patch(images, weight, bias); });
      std::printf("%-28s %-18s %9.3f ms %8.1f TFLOP/s\n", "[128,3,224,224] P=16",
                  precision == MatmulPrecision::fp32 ? "fp32" : "tf32", ms, flops / (ms * 1e9));
    }
  }

  std::printf("\n%-28s %-18s %12s %14s\n", "linear (M = 128·197)", "precision", "time", "throughput");
  const std::pair<int64_t, int64_t> layers[] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
  for (MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::tf32}) {
    const ScopedEngineSettings scope(&EngineSettings::matmul_precision, precision);
    const double ceiling = precision == MatmulPrecision::fp32 ? fp32_tflops : tf32_tflops;
    const char* label = precision == MatmulPrecision::fp32 ? "fp32" : "tf32";
    for (const auto& [in, out] : layers) {
      Tensor input = random_on_device({tokens, in}, 11), weight = random_on_device({out, in}, 12, -0.03, 0.03);
      Tensor bias = random_on_device({out}, 13);
      const double flops = 2.0 * static_cast<double>(tokens * in * out);
      const double fwd = time_ms([&] { Tensor z = linear(input, weight, bias); });
      Tensor xg = input.detach().set_requires_grad(true), wg = weight.detach().set_requires_grad(true),
             bg = bias.detach().set_requires_grad(true);
      Tensor seed = random_on_device({tokens, out}, 14);
      const double both = time_ms([&] {
        xg.zero_grad(), wg.zero_grad(), bg.zero_grad();
        run_backward(linear(xg, wg, bg), seed, false);
      });
      const std::string name = std::to_string(in) + "->" + std::to_string(out);
      std::printf("%-28s %-18s %9.3f ms %8.1f TFLOP/s %6.1f%% of GEMM%s\n", (name + " forward").c_str(), label, fwd,
                  flops / (fwd * 1e9), 100.0 * flops / (fwd * 1e9) / ceiling,
                  torch_column(name + " forward " + label, fwd).c_str());
      std::printf("%-28s %-18s %9.3f ms %8.1f TFLOP/s %6.1f%% of GEMM%s\n", (name + " fwd+bwd").c_str(), label, both,
                  3 * flops / (both * 1e9), 100.0 * 3 * flops / (both * 1e9) / ceiling,
                  torch_column(name + " fwd+bwd " + label, both).c_str());
    }
  }

  {
    // A frozen ViT-B/16 block on bf16 activations at batch 128 (Block::forward_bf16, the frozen
    // blocks' path with --precision bf16), op by op: where a block's time goes.
    Block block(width, 12, 3072, true, 1e-6);
    block.initialize(21);
    block.set_requires_grad(false);
    block.to(Device::cuda());
    const Tensor x16 = random_on_device({128, 197, width}, 22).to(DType::bf16);
    const Tensor normed = block.norm1.forward_bf16(x16), qkv = block.attn.qkv.forward_bf16(normed);
    const Tensor context = bf16_attention(qkv, 12), hidden = block.mlp.fc1.forward_bf16(normed);
    const double act16 = static_cast<double>(tokens * width) * 2.0;
    auto report_gemm = [&](const char* name, double flops, const std::function<void()>& work) {
      const double ms = time_ms(work);
      std::printf("%-28s %-18s %9.3f ms %8.1f TFLOP/s\n", name, "bf16", ms, flops / (ms * 1e9));
      return ms;
    };
    // The four products, for the fused ideal: every FLOP of the block at their measured rate.
    double product_flops = 0, product_ms = 0;
    auto report_product = [&](const char* name, double flops, const std::function<void()>& work) {
      product_flops += flops;
      product_ms += report_gemm(name, flops, work);
    };
    const double t = static_cast<double>(tokens), d = static_cast<double>(width);
    std::printf("\n%-28s %-18s %12s %14s\n", "bf16 frozen block (B = 128)", "", "time", "throughput");
    report_memory_op("layer_norm bf16", act_shape, 2 * act16, [&] { Tensor z = block.norm1.forward_bf16(x16); },
                     copy_gbs);
    report_product("qkv 768->2304", 2 * t * d * 3 * d, [&] { Tensor z = block.attn.qkv.forward_bf16(normed); });
    // The attention and the whole block with each attention algorithm (EngineSettings::attention):
    // [unfused] two batched cuBLAS products and a softmax kernel, [flash] the mma.sync kernel with
    // the softmax in registers, [fused] one WMMA kernel (the default), [cudnn] cuDNN's fused
    // attention where it offers a plan (bf16_attention would otherwise run the fused kernel); [wgmma]
    // the warpgroup-product kernel on a 9.0 device, timed after this block's other rows (below).
    const double attention_flops = 4.0 * 128 * 12 * 197 * 197 * 64;  // q·kᵀ and p·v
    std::string cudnn_refusal;
    const auto plan_start = std::chrono::steady_clock::now();
    if (cuda::attention_bf16_cudnn_supported(qkv.ptr<bf16>(), context.ptr<bf16>(), 128, 197, 12, 64, &cudnn_refusal))
      std::printf("%-28s %s; the attention's plan built in %.2f s (its kernels compiled then, once per shape)\n",
                  "cuDNN", cuda::cudnn_description().c_str(), seconds_since(plan_start));
    // Returns the fastest time of the fused algorithms (every one but unfused).
    auto report_attentions = [&](const std::string& name, double flops, const std::function<void()>& work) {
      double fused_ms = 1e30;
      for (const auto& [algorithm, label] : {std::pair{AttentionAlgorithm::unfused, " [unfused]"},
                                             std::pair{AttentionAlgorithm::flash, " [flash]"},
                                             std::pair{AttentionAlgorithm::fused, " [fused]"},
                                             std::pair{AttentionAlgorithm::cudnn, " [cudnn]"}}) {
        if (algorithm == AttentionAlgorithm::cudnn && !cudnn_refusal.empty()) {
          std::printf("%-28s unavailable: %s\n", (name + label).c_str(), cudnn_refusal.c_str());
          continue;
        }
        const ScopedEngineSettings scope(&EngineSettings::attention, algorithm);
        const double ms = report_gemm((name + label).c_str(), flops, work);
        if (algorithm != AttentionAlgorithm::unfused) fused_ms = std::min(fused_ms, ms);
      }
      return fused_ms;
    };
    report_attentions("attention", attention_flops, [&] { Tensor z = bf16_attention(qkv, 12); });
    report_product("proj 768->768 + residual", 2 * t * d * d,
                   [&] { Tensor z = block.attn.proj.forward_bf16(context, x16); });
    report_product("fc1 768->3072", 2 * t * d * 4 * d, [&] { Tensor z = block.mlp.fc1.forward_bf16(normed); });
    report_memory_op("gelu bf16", "[25216, 3072]", 8 * act16, [&] { Tensor z = bf16_gelu(hidden); }, copy_gbs);
    // fc1 with its GELU (EngineSettings::bf16_gelu): [erf] the product, then the GELU kernel (the
    // default); [tanh] cuBLASLt's GELU epilogue, no pass of its own; [cudnn] the erf form inside
    // cuDNN's fused matmul where it offers a plan (bf16_linear_gelu would otherwise run erf's two).
    const Tensor fc1_weight16 = block.mlp.fc1.weight.to(DType::bf16), fc1_bias16 = block.mlp.fc1.bias.to(DType::bf16);
    std::string cudnn_gelu_refusal;
    const auto gelu_plan_start = std::chrono::steady_clock::now();
    if (cuda::linear_gelu_bf16_cudnn_supported(normed.ptr<bf16>(), fc1_weight16.ptr<bf16>(), fc1_bias16.ptr<bf16>(),
                                               hidden.ptr<bf16>(), 128, 197, width, 4 * width, &cudnn_gelu_refusal))
      std::printf("%-28s fc1 + GELU's plan built in %.2f s\n", "cuDNN", seconds_since(gelu_plan_start));
    for (const Bf16Gelu gelu : {Bf16Gelu::erf, Bf16Gelu::tanh, Bf16Gelu::cudnn}) {
      const std::string name = std::string("fc1 + GELU [") + bf16_gelu_name(gelu) + "]";
      if (gelu == Bf16Gelu::cudnn && !cudnn_gelu_refusal.empty()) {
        std::printf("%-28s unavailable: %s\n", name.c_str(), cudnn_gelu_refusal.c_str());
        continue;
      }
      const ScopedEngineSettings scope(&EngineSettings::bf16_gelu, gelu);
      report_gemm(name.c_str(), 2 * t * d * 4 * d, [&] { Tensor z = block.mlp.fc1.forward_bf16_gelu(normed); });
    }
    report_product("fc2 3072->768 + residual", 2 * t * d * 4 * d,
                   [&] { Tensor z = block.mlp.fc2.forward_bf16(hidden, x16); });
    const double block_flops = 24 * t * d * d + attention_flops;
    const double block_ms =
        report_attentions("whole block", block_flops, [&] { Tensor z = block.forward_bf16(x16); });
    for (const Bf16Gelu gelu : {Bf16Gelu::tanh, Bf16Gelu::cudnn}) {
      const std::string name = std::string("whole block [") + bf16_gelu_name(gelu) + " GELU, " +
                               attention_algorithm_name(engine_settings().attention) + "]";
      if (gelu == Bf16Gelu::cudnn && !cudnn_gelu_refusal.empty()) {
        std::printf("%-28s unavailable: %s\n", name.c_str(), cudnn_gelu_refusal.c_str());
        continue;
      }
      const ScopedEngineSettings scope(&EngineSettings::bf16_gelu, gelu);
      report_gemm(name.c_str(), block_flops, [&] { Tensor z = block.forward_bf16(x16); });
    }
    // How far the block is from one where the attention and the element-wise passes cost nothing
    // beyond their FLOPs (fused into the products, at the products' measured rate).
    const double ideal_ms = block_flops / (product_flops / product_ms);
    std::printf("%-28s %-18s %9.3f ms (the products' %.1f TFLOP/s on every FLOP); the block, faster fused "
                "attention: %.2fx it\n",
                "fused ideal", "bf16", ideal_ms, product_flops / (product_ms * 1e9), block_ms / ideal_ms);
    report_memory_op("f32 -> bf16", act_shape, 1.5 * activation, [&] { Tensor z = x.to(DType::bf16); }, copy_gbs);
    // The wgmma attention last of this block's rows: its first run on new hardware, where a fault
    // would end the process, can then cost only the rows after it.
    std::string wgmma_refusal;
    if (!cuda::attention_bf16_wgmma_supported(qkv.ptr<bf16>(), context.ptr<bf16>(), 197, 64, &wgmma_refusal)) {
      std::printf("%-28s unavailable: %s\n", "attention [wgmma]", wgmma_refusal.c_str());
      std::printf("%-28s unavailable: %s\n", "whole block [wgmma]", wgmma_refusal.c_str());
    } else {
      const ScopedEngineSettings scope(&EngineSettings::attention, AttentionAlgorithm::wgmma);
      report_gemm("attention [wgmma]", attention_flops, [&] { Tensor z = bf16_attention(qkv, 12); });
      report_gemm("whole block [wgmma]", block_flops, [&] { Tensor z = block.forward_bf16(x16); });
    }
  }
  {
    // A frozen DINOv2 ViT-B/14 block at 224 px (257 tokens, LayerScale folded into proj and fc2)
    // beside the ViT-B/16 block above, with the default attention.
    Block block(width, 12, 3072, true, 1e-6, true);
    block.initialize(31);
    block.set_requires_grad(false);
    block.to(Device::cuda());
    const Tensor x16 = random_on_device({128, 257, width}, 32).to(DType::bf16);
    const double t = 128.0 * 257, d = static_cast<double>(width);
    const double flops = 24 * t * d * d + 4.0 * 128 * 12 * 257 * 257 * 64;
    const double ms = time_ms([&] { Tensor z = block.forward_bf16(x16); });
    std::printf("%-28s %-18s %9.3f ms %8.1f TFLOP/s\n", "DINOv2 block (T = 257)", "bf16", ms, flops / (ms * 1e9));
  }
  {
    // k-means' assignment at ImageNet-1K's K = 1000: one block of products compared on the device,
    // against copying that block to the host (what the step did before), and a warm refit.
    const int64_t rows = 4096, k = 1000, points = 131072;
    const Tensor products = random_on_device({rows, k}, 20);
    const Tensor point_norms = random_on_device({rows}, 21, 1, 2).to(DType::f64);
    const Tensor centre_norms = random_on_device({k}, 22, 1, 2).to(DType::f64);
    const double nearest_ms = time_ms([&] { Tensor z = nearest_from_products(products, point_norms, centre_norms); });
    const double copy_ms = time_ms([&] { Tensor z = products.to(Device::cpu()); });
    std::printf("\n%-28s %-18s %9.3f ms on the device; its products' copy to the host (the step before): %.3f ms\n",
                "k-means nearest centre", "[4096, 1000]", nearest_ms, copy_ms);
    const Tensor features = random_on_device({points, width}, 23);
    const Tensor start = slice(features, 0, 0, k).clone();
    const KMeansOptions options{.k = k, .restarts = 1, .max_iters = 5, .tol = 0.0, .seed = 0};
    int64_t iterations = 0;
    const double fit_ms = time_ms(
        [&] { iterations = semi_supervised_kmeans(features, {}, {}, options, start).iterations; }, 1);
    std::printf("%-28s %-18s %9.3f ms an iteration (%lld iterations, fp32 products)\n", "k-means warm refit",
                "[131072, 768] K=1000", fit_ms / static_cast<double>(iterations), static_cast<long long>(iterations));
    // Its two other passes over the points, on the device against the host (this machine's cores).
    // Point i in cluster i mod K: each cluster's members are rows K apart, listed in index order as
    // k-means lists them.
    std::vector<int64_t> labels, members, offsets = {0};
    for (int64_t i = 0; i < points; ++i) labels.push_back(i % k);
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t i = c; i < points; i += k) members.push_back(i);
      offsets.push_back(static_cast<int64_t>(members.size()));
    }
    const Tensor host_features = features.to(Device::cpu()), host_labels = from_vector(labels, {points});
    const Tensor host_centres = slice(host_features, 0, 0, k).to(DType::f64);
    const Tensor host_members = from_vector(members, {points}), host_offsets = from_vector(offsets, {k + 1});
    const Tensor dev_labels = host_labels.to(Device::cuda()), dev_centres = host_centres.to(Device::cuda());
    const Tensor dev_members = host_members.to(Device::cuda()), dev_offsets = host_offsets.to(Device::cuda());
    const double distances_ms =
        time_ms([&] { Tensor z = assigned_squared_distances(features, dev_labels, dev_centres); });
    const double sums_ms = time_ms([&] { Tensor z = cluster_sums(features, dev_members, dev_offsets, 0, width); });
    const auto host_ms = [](const std::function<void()>& work) {
      const auto begin = std::chrono::steady_clock::now();
      work();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    };
    const double host_distances_ms =
        host_ms([&] { Tensor z = assigned_squared_distances(host_features, host_labels, host_centres); });
    const double host_sums_ms =
        host_ms([&] { Tensor z = cluster_sums(host_features, host_members, host_offsets, 0, width); });
    std::printf("%-28s %-18s %9.3f ms on the device; on the host: %.3f ms\n", "k-means exact distances",
                "[131072, 768] K=1000", distances_ms, host_distances_ms);
    std::printf("%-28s %-18s %9.3f ms on the device; on the host: %.3f ms\n", "k-means centre sums",
                "[131072, 768] K=1000", sums_ms, host_sums_ms);
  }
  return 0;
}
