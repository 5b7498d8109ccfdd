#include "engine/ops/inference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/shape.h"
#include "engine/profile.h"
#include "engine/settings.h"
#include "kernels/cuda/attention_wgmma.h"
#include "kernels/cuda/bf16_inference.h"
#include "kernels/cuda/gemm.h"

namespace mcdl {
namespace {

void check_inference_input(const char* op, const Tensor& x, DType dtype) {
  check_defined(op, x);
  check(x.dtype() == dtype, op, ": expected a ", dtype_name(dtype), " tensor, got ", x);
  check(!x.requires_grad(), op, ": forward only (the frozen blocks), but input ", x, " requires a gradient");
}

// A product's parameter: f32 (rounded here) or bf16 (rounded once by a Bf16Copy).
void check_product_parameter(const char* op, const Tensor& p) {
  check_defined(op, p, "parameter");
  check(p.dtype() == DType::f32 || p.dtype() == DType::bf16, op, ": expected an f32 or bf16 parameter, got ", p);
  check(!p.requires_grad(), op, ": forward only (the frozen blocks), but parameter ", p, " requires a gradient");
}

// A fallback worth telling once: on stderr the first time each distinct message comes.
void note_once(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  const std::lock_guard lock(mutex);
  if (said.insert(message).second) std::fprintf(stderr, "note: %s\n", message.c_str());
}

}  // namespace

Bf16Copy::Origin Bf16Copy::Origin::of(const Tensor& t) {
  if (!t.defined()) return Origin{};
  return Origin{false, t.storage(), t.storage_offset(), t.shape(), t.storage()->writes()};
}

bool Bf16Copy::Origin::same(const Tensor& t) const {
  if (!t.defined() || none) return !t.defined() && none;
  const std::shared_ptr<Storage>& s = t.storage();
  return storage.lock() == s && offset == t.storage_offset() && shape == t.shape() && writes == s->writes();
}

const Tensor& Bf16Copy::of(const Tensor& source, const Tensor& gain) {
  if (!gain.defined() && source.dtype() == DType::bf16) return source;
  if (gain.defined()) {
    check_defined("Bf16Copy::of", source);
    check(source.dim() >= 1 && gain.dtype() == DType::f32 && gain.shape() == Shape{source.size(0)} &&
              gain.device() == source.device(),
          "Bf16Copy::of: gain ", gain, " does not scale the rows of ", source);
  }
  if (!copy_.defined() || !source_.same(source) || !gain_.same(gain)) {
    if (gain.defined()) {
      const NoGradGuard no_grad;
      Shape per_row(static_cast<size_t>(source.dim()), 1);
      per_row[0] = gain.size(0);
      copy_ = (source.to(DType::f32) * reshape(gain, per_row)).to(DType::bf16);
    } else {
      copy_ = source.to(DType::bf16);
    }
    source_ = Origin::of(source);
    gain_ = Origin::of(gain);
  }
  return copy_;
}

Tensor bf16_layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  check_inference_input("bf16_layer_norm", x, DType::bf16);
  check(x.dim() >= 1 && x.size(-1) > 0, "bf16_layer_norm: input ", x, " has no last dimension to normalise");
  const int64_t d = x.size(-1);
  for (const Tensor* param : {&gamma, &beta}) {
    check_inference_input("bf16_layer_norm", *param, DType::f32);
    check(param->device() == x.device() && param->shape() == Shape{d}, "bf16_layer_norm: parameter ", *param,
          " does not fit input ", x);
  }
  Tensor out = empty(x.shape(), DType::bf16, x.device());
  on_device(x.device(), [&](auto k) {
    k.layer_norm_bf16(x.ptr<bf16>(), gamma.ptr<float>(), beta.ptr<float>(), out.ptr<bf16>(), x.numel() / d, d,
                      static_cast<float>(eps));
  });
  return out;
}

namespace {

// bf16_linear and bf16_linear_gelu: the checks, then the kernel; gelu has no residual.
Tensor bf16_linear_op(const char* op, bool gelu, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Tensor& residual) {
  check_inference_input(op, x, DType::bf16);
  check_product_parameter(op, weight);
  const int64_t in = x.dim() >= 1 ? x.size(-1) : 0;
  check(weight.dim() == 2 && weight.size(1) == in && weight.device() == x.device(), op, ": input ", x,
        " does not fit weight ", weight);
  const int64_t out_features = weight.size(0);
  if (bias.defined()) {
    check_product_parameter(op, bias);
    check(bias.shape() == Shape{out_features} && bias.device() == x.device(), op, ": bias ", bias,
          " does not fit weight ", weight);
  }
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  if (residual.defined()) {
    check_inference_input(op, residual, DType::bf16);
    check(residual.shape() == out_shape && residual.device() == x.device(), op, ": residual ", residual,
          " does not match the output ", shape_str(out_shape));
  }
  const Tensor weight16 = weight.to(DType::bf16);
  const Tensor bias16 = bias.defined() ? bias.to(DType::bf16) : zeros({out_features}, DType::bf16, x.device());
  Tensor out = empty(out_shape, DType::bf16, x.device());
  const int64_t rows = x.numel() / std::max<int64_t>(in, 1);
  const Bf16Gelu gelu_choice = engine_settings().bf16_gelu;
  if (gelu && gelu_choice == Bf16Gelu::cudnn && x.device().is_cuda() && rows > 0 && out_features > 0) {
    // Entries of `tokens` rows, chunked by entry for cuDNN's plans: a [B, T, in] input's images.
    const int64_t tokens = x.dim() >= 3 ? x.size(-2) : 1, batch = rows / tokens;
    std::string why;
    if (cuda::linear_gelu_bf16_cudnn_supported(x.ptr<bf16>(), weight16.ptr<bf16>(), bias16.ptr<bf16>(),
                                               out.ptr<bf16>(), batch, tokens, in, out_features, &why)) {
      const ProfileRange range(x.device(), "linear_gelu_bf16_cudnn");
      cuda::linear_gelu_bf16_cudnn(batch, tokens, in, out_features, x.ptr<bf16>(), weight16.ptr<bf16>(),
                                   bias16.ptr<bf16>(), out.ptr<bf16>());
      return out;
    }
    note_once(why + "; fc1's product and the erf GELU's pass run instead");
  }
  on_device(x.device(), [&](auto k) {
    if (gelu) {
      k.linear_gelu_bf16(rows, in, out_features, x.ptr<bf16>(), weight16.ptr<bf16>(), bias16.ptr<bf16>(),
                         out.ptr<bf16>(), gelu_form(gelu_choice));
    } else {
      k.linear_bf16(rows, in, out_features, x.ptr<bf16>(), weight16.ptr<bf16>(), bias16.ptr<bf16>(),
                    residual.defined() ? residual.ptr<bf16>() : nullptr, out.ptr<bf16>());
    }
  });
  return out;
}

}  // namespace

Tensor bf16_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual) {
  return bf16_linear_op("bf16_linear", false, x, weight, bias, residual);
}

Tensor bf16_linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return bf16_linear_op("bf16_linear_gelu", true, x, weight, bias, Tensor());
}

Tensor bf16_gelu(const Tensor& x) {
  check_inference_input("bf16_gelu", x, DType::bf16);
  Tensor out = empty(x.shape(), DType::bf16, x.device());
  on_device(x.device(), [&](auto k) { k.gelu_bf16(x.ptr<bf16>(), out.ptr<bf16>(), x.numel()); });
  return out;
}

Tensor bf16_attention(const Tensor& qkv, int64_t num_heads) {
  check_inference_input("bf16_attention", qkv, DType::bf16);
  check(qkv.dim() == 3 && num_heads > 0 && qkv.size(2) % (3 * num_heads) == 0, "bf16_attention: expected qkv [B, T, ",
        "3·D] with D divisible by ", num_heads, " heads, got ", qkv);
  const int64_t b = qkv.size(0), t = qkv.size(1), d = qkv.size(2) / 3, hd = d / num_heads;
  Tensor context = empty({b, t, d}, DType::bf16, qkv.device());
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  const AttentionAlgorithm algorithm = engine_settings().attention;
  // cuDNN's attention and the wgmma kernel take some shapes and devices only; elsewhere the fused
  // kernel runs, with a note.
  if (qkv.device().is_cuda() && (algorithm == AttentionAlgorithm::cudnn || algorithm == AttentionAlgorithm::wgmma)) {
    const bool cudnn = algorithm == AttentionAlgorithm::cudnn;
    std::string why;
    if (cudnn ? cuda::attention_bf16_cudnn_supported(qkv.ptr<bf16>(), context.ptr<bf16>(), b, t, num_heads, hd, &why)
              : cuda::attention_bf16_wgmma_supported(qkv.ptr<bf16>(), context.ptr<bf16>(), t, hd, &why)) {
      const ProfileRange range(qkv.device(), cudnn ? "attention_bf16_cudnn" : "attention_bf16_wgmma");
      (cudnn ? cuda::attention_bf16_cudnn : cuda::attention_bf16_wgmma)(qkv.ptr<bf16>(), context.ptr<bf16>(), b, t,
                                                                       num_heads, hd, scale);
      return context;
    }
    note_once(why + "; the engine's fused attention runs instead");
  }
  const bool fused = algorithm != AttentionAlgorithm::unfused &&
                     cuda::attention_bf16_fuses(qkv.ptr<bf16>(), context.ptr<bf16>(), hd);
  if (qkv.device().is_cuda() && fused && algorithm == AttentionAlgorithm::flash) {
    const ProfileRange range(qkv.device(), "attention_bf16_flash");
    cuda::attention_bf16_flash(qkv.ptr<bf16>(), context.ptr<bf16>(), b, t, num_heads, hd, scale);
    return context;
  }
  if (qkv.device().is_cuda() && !fused) {
    Tensor scores = empty({b * num_heads, t, t}, DType::bf16, qkv.device());
    const ProfileRange range(qkv.device(), "attention_bf16_unfused");
    cuda::attention_bf16_unfused(qkv.ptr<bf16>(), scores.ptr<bf16>(), context.ptr<bf16>(), b, t, num_heads, hd,
                                 scale);
    return context;
  }
  on_device(qkv.device(), [&](auto k) {
    k.attention_bf16(qkv.ptr<bf16>(), context.ptr<bf16>(), b, t, num_heads, hd, scale);
  });
  return context;
}

}  // namespace mcdl
