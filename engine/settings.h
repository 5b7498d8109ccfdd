// The engine's process-wide switches in one value: how f32 products, the bf16 attention and the
// bf16 MLP's GELU run, whether the frozen blocks run as CUDA graphs, and two test aids
// (NaN-poisoned fresh storage, a forced CUDA block size).
//
// Threads: there is one current value per process, read through engine_settings() by any thread
// (OpenMP workers run the ops, data-loader threads allocate storage). It changes only through
// ScopedEngineSettings on the main thread, between operations: a guard sets its value and puts
// back the one it found, so guards nest like the scopes that hold them, and what a run or a test
// case sets ends with it. The value is one lock-free atomic, so another thread reads the old or
// the new settings whole.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/gelu_form.h"

namespace mcdl {

// How f32 matrix products run on a CUDA device: full fp32 (the default, as PyTorch ≥ 1.12),
// TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation), or bf16 tensor cores (inputs
// rounded to bf16 as PyTorch's autocast does; fp32 accumulation and output). On the CPU, bf16
// products run through oneDNN (Debian's OpenBLAS has no bf16 GEMM), and tf32 runs as fp32.
enum class MatmulPrecision : uint8_t { fp32, tf32, bf16 };

// How bf16_attention runs on a CUDA device: fused (the default: one WMMA tensor-core kernel, no
// [B·H, T, T] scores in memory, the softmax through each warp's shared memory; head sizes 16 to 64
// in steps of 16, other sizes take the unfused path), flash (the same sizes, FlashAttention-2's
// arrangement on mma.sync: scores, softmax and numerators in registers, keys and values staged
// asynchronously; its present form not yet timed on a GPU, so not the default), wgmma (Hopper's
// warpgroup products, head size 64 and up to 512 tokens on a 9.0 device, the fused kernel
// elsewhere with a note on stderr; not yet run on a GPU), cudnn (cuDNN's
// fused scaled-dot-product attention, its flash-attention engine, loaded at run time; where cuDNN
// is missing or offers no plan for a shape, the fused kernel runs instead, with a note on stderr
// once per reason; not yet timed on a GPU), or unfused (two batched
// cuBLAS products with a softmax kernel between them, the scores rounded to bf16 in a scratch of
// B·H·T·T). `make bench-gpu` times all five; the tools take the run's choice from $MCDL_ATTENTION
// (tools/common/cli.h).
enum class AttentionAlgorithm : uint8_t { fused, unfused, flash, cudnn, wgmma };
inline constexpr AttentionAlgorithm attention_algorithms[] = {AttentionAlgorithm::fused, AttentionAlgorithm::unfused,
                                                               AttentionAlgorithm::flash, AttentionAlgorithm::cudnn,
                                                               AttentionAlgorithm::wgmma};
// "fused", "unfused", "flash", "cudnn", "wgmma"; parse_attention_algorithm throws std::invalid_argument
// naming the choices when the text is none of them.
const char* attention_algorithm_name(AttentionAlgorithm algorithm);
AttentionAlgorithm parse_attention_algorithm(const std::string& text);

// The GELU of the frozen blocks' bf16 MLP (bf16_linear_gelu) and where a GPU computes it: erf (the
// default: DINO's exact form, in a pass of its own after fc1's product), tanh (the approximation,
// which a GPU computes inside fc1's product through cuBLASLt's GELU epilogue), or cudnn (the erf
// form inside fc1's product, through cuDNN's fused matmul, loaded at run time; where cuDNN is
// missing or offers no plan, erf's product and pass run instead, with a note on stderr once per
// reason). tanh and cudnn are not yet timed on a GPU, so not the default; on the CPU cudnn is erf
// (oneDNN applies either form inside its product). The fp32 and TF32 paths and the trained blocks
// always use erf. The tools take the run's choice from $MCDL_BF16_GELU (tools/common/cli.h).
enum class Bf16Gelu : uint8_t { erf, tanh, cudnn };
// The GELU's formula for a choice: tanh for tanh, else erf.
GeluForm gelu_form(Bf16Gelu gelu);
// "erf", "tanh", "cudnn"; parse_bf16_gelu throws std::invalid_argument naming the choices otherwise.
const char* bf16_gelu_name(Bf16Gelu gelu);
Bf16Gelu parse_bf16_gelu(const std::string& text);

// Whether the frozen blocks' forward runs as CUDA graphs on a CUDA device: off (the default until
// a GPU has timed it), or frozen (VisionTransformer::forward_frozen without a gradient: a graph per
// input shape seen twice, replayed from then on, bit for bit the eager result;
// layers/frozen_graphs.h). The tools take the run's choice from $MCDL_CUDA_GRAPHS.
enum class CudaGraphs : uint8_t { off, frozen };
// "off", "frozen"; parse_cuda_graphs throws std::invalid_argument naming the choices otherwise.
const char* cuda_graphs_name(CudaGraphs graphs);
CudaGraphs parse_cuda_graphs(const std::string& text);

// One-byte enums: the whole struct fits 8 bytes, a lock-free atomic. alignas(8): with only its
// members' 4-byte alignment clang compiles libstdc++'s atomic load and store of it into calls to
// libatomic (__atomic_load), which the fuzz build does not link.
struct alignas(8) EngineSettings {
  MatmulPrecision matmul_precision = MatmulPrecision::fp32;
  AttentionAlgorithm attention = AttentionAlgorithm::fused;
  Bf16Gelu bf16_gelu = Bf16Gelu::erf;
  CudaGraphs cuda_graphs = CudaGraphs::off;
  // Every new storage filled with NaN bytes (0xFF) before use, so that a kernel that leaves part
  // of a fresh buffer unwritten shows in the tests.
  bool poison_new_storage = false;
  // 0, or a multiple of 32 up to 1024 that every CUDA launcher uses instead of its preferred
  // block size (the parity tests run each kernel at a second size). The launchers sit below the
  // engine, so a guard hands it to them (cuda::set_block_size_override).
  uint16_t block_size_override = 0;
};

EngineSettings engine_settings();

// While it lives, its settings are the current ones; then those it replaced are again.
class ScopedEngineSettings {
 public:
  // Throws std::invalid_argument for a block size override that is not 0 or a multiple of 32 up
  // to 1024.
  explicit ScopedEngineSettings(const EngineSettings& settings);
  // The current settings with one field changed:
  //   const ScopedEngineSettings tf32(&EngineSettings::matmul_precision, MatmulPrecision::tf32);
  template <class Field>
  ScopedEngineSettings(Field EngineSettings::*field, std::type_identity_t<Field> value)
      : ScopedEngineSettings(with(field, value)) {}
  ~ScopedEngineSettings();
  ScopedEngineSettings(const ScopedEngineSettings&) = delete;
  ScopedEngineSettings& operator=(const ScopedEngineSettings&) = delete;

 private:
  template <class Field>
  static EngineSettings with(Field EngineSettings::*field, Field value) {
    EngineSettings settings = engine_settings();
    settings.*field = value;
    return settings;
  }

  EngineSettings previous_;
};

}  // namespace mcdl
