// ScopedEngineSettings: what a guard sets lasts as long as the guard, nested guards unwind in
// order, and a refused value changes nothing.
#include <doctest/doctest.h>

#include <stdexcept>

#include "engine/settings.h"
#include "kernels/cuda/launch_config.h"

using namespace mcdl;

TEST_CASE("engine settings: guards set, nest and restore") {
  const EngineSettings defaults = engine_settings();
  CHECK(defaults.matmul_precision == MatmulPrecision::fp32);
  CHECK(defaults.attention == AttentionAlgorithm::fused);
  CHECK(defaults.bf16_gelu == Bf16Gelu::erf);
  CHECK_FALSE(defaults.poison_new_storage);
  CHECK(defaults.block_size_override == 0);
  {
    const ScopedEngineSettings bf16(&EngineSettings::matmul_precision, MatmulPrecision::bf16);
    {
      const ScopedEngineSettings block(&EngineSettings::block_size_override, 64);
      CHECK(engine_settings().matmul_precision == MatmulPrecision::bf16);  // kept by the inner guard
      CHECK(engine_settings().block_size_override == 64);
      CHECK(cuda::block_size(256) == 64);  // handed to the launchers
    }
    CHECK(engine_settings().block_size_override == 0);
    CHECK(cuda::block_size(256) == 256);
    CHECK(engine_settings().matmul_precision == MatmulPrecision::bf16);
  }
  CHECK(engine_settings().matmul_precision == MatmulPrecision::fp32);
}

TEST_CASE("engine settings: a block size that is not a multiple of 32 up to 1024 is refused") {
  for (unsigned block : {48u, 2048u}) {
    CAPTURE(block);
    CHECK_THROWS_AS(ScopedEngineSettings(&EngineSettings::block_size_override, block), std::invalid_argument);
    CHECK(engine_settings().block_size_override == 0);
    CHECK(cuda::block_size(256) == 256);
  }
}

TEST_CASE("engine settings: the attention algorithms by name") {
  for (AttentionAlgorithm algorithm : attention_algorithms)
    CHECK(parse_attention_algorithm(attention_algorithm_name(algorithm)) == algorithm);
  CHECK_THROWS_WITH_AS(parse_attention_algorithm("fast"), "expected fused, unfused, flash, cudnn or wgmma, got 'fast'",
                       std::invalid_argument);
}

TEST_CASE("engine settings: the GELU forms by name") {
  for (Bf16Gelu gelu : {Bf16Gelu::erf, Bf16Gelu::tanh, Bf16Gelu::cudnn})
    CHECK(parse_bf16_gelu(bf16_gelu_name(gelu)) == gelu);
  CHECK(gelu_form(Bf16Gelu::tanh) == GeluForm::tanh);
  CHECK(gelu_form(Bf16Gelu::cudnn) == GeluForm::erf);
  CHECK_THROWS_WITH_AS(parse_bf16_gelu("exact"), "expected erf, tanh or cudnn, got 'exact'", std::invalid_argument);
}

TEST_CASE("engine settings: the CUDA graph modes by name, off by default") {
  CHECK(EngineSettings{}.cuda_graphs == CudaGraphs::off);
  for (CudaGraphs graphs : {CudaGraphs::off, CudaGraphs::frozen}) CHECK(parse_cuda_graphs(cuda_graphs_name(graphs)) == graphs);
  CHECK_THROWS_WITH_AS(parse_cuda_graphs("on"), "expected off or frozen, got 'on'", std::invalid_argument);
}
