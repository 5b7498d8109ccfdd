#include "engine/settings.h"

#include <atomic>
#include <stdexcept>

#include "kernels/cuda/launch_config.h"

namespace mcdl {
namespace {

// constinit: already the defaults when another file's static initializer allocates storage.
constinit std::atomic<EngineSettings> current{EngineSettings{}};
static_assert(std::atomic<EngineSettings>::is_always_lock_free, "engine_settings() must stay a plain load");

void make_current(const EngineSettings& settings) {
  cuda::set_block_size_override(settings.block_size_override);  // validates it first
  current.store(settings);
}

}  // namespace

const char* attention_algorithm_name(AttentionAlgorithm algorithm) {
  switch (algorithm) {
    case AttentionAlgorithm::fused: return "fused";
    case AttentionAlgorithm::unfused: return "unfused";
    case AttentionAlgorithm::flash: return "flash";
    case AttentionAlgorithm::cudnn: return "cudnn";
    case AttentionAlgorithm::wgmma: return "wgmma";
  }
  return "unknown";
}

AttentionAlgorithm parse_attention_algorithm(const std::string& text) {
  for (AttentionAlgorithm algorithm : attention_algorithms)
    if (text == attention_algorithm_name(algorithm)) return algorithm;
  throw std::invalid_argument("expected fused, unfused, flash, cudnn or wgmma, got '" + text + "'");
}

GeluForm gelu_form(Bf16Gelu gelu) { return gelu == Bf16Gelu::tanh ? GeluForm::tanh : GeluForm::erf; }

const char* bf16_gelu_name(Bf16Gelu gelu) {
  switch (gelu) {
    case Bf16Gelu::erf: return "erf";
    case Bf16Gelu::tanh: return "tanh";
    case Bf16Gelu::cudnn: return "cudnn";
  }
  return "unknown";
}

Bf16Gelu parse_bf16_gelu(const std::string& text) {
  for (Bf16Gelu gelu : {Bf16Gelu::erf, Bf16Gelu::tanh, Bf16Gelu::cudnn})
    if (text == bf16_gelu_name(gelu)) return gelu;
  throw std::invalid_argument("expected erf, tanh or cudnn, got '" + text + "'");
}

const char* cuda_graphs_name(CudaGraphs graphs) { return graphs == CudaGraphs::frozen ? "frozen" : "off"; }

CudaGraphs parse_cuda_graphs(const std::string& text) {
  for (CudaGraphs graphs : {CudaGraphs::off, CudaGraphs::frozen})
    if (text == cuda_graphs_name(graphs)) return graphs;
  throw std::invalid_argument("expected off or frozen, got '" + text + "'");
}

EngineSettings engine_settings() { return current.load(std::memory_order_relaxed); }

ScopedEngineSettings::ScopedEngineSettings(const EngineSettings& settings) : previous_(engine_settings()) {
  make_current(settings);
}

ScopedEngineSettings::~ScopedEngineSettings() { make_current(previous_); }

}  // namespace mcdl
