#include "engine/ops/loss.h"

#include "engine/autograd.h"
#include "engine/backend.h"
#include "engine/dispatch.h"
#include "engine/ops/indexing.h"  // HostIndex

namespace mcdl {
namespace {

// logits [N, C] with N > 0 (the mean of an empty batch is undefined).
void check_logits(const char* op, const Tensor& logits) {
  check_floating(op, logits);
  check(logits.dim() == 2, op, ": logits must be [N, C], got ", logits);
  check(logits.size(0) > 0 && logits.size(1) > 0, op, ": logits ", logits,
        " are empty; the mean over no samples is undefined");
}

[[noreturn]] void fail_target_range(int64_t target, int64_t position, int64_t classes) {
  fail("cross_entropy: target ", target, " at position ", position, " is out of range for ", classes, " classes [0, ",
       classes, ")");
}

// Throws on the first target outside [0, classes), naming its value and position. Reads the
// targets on the host (CUDA targets are copied there first, before any kernel runs).
template <class Index>
void check_target_range(const Tensor& targets, int64_t classes) {
  const Index* t = targets.data<Index>();
  for (int64_t n = 0; n < targets.numel(); ++n)
    if (t[n] < 0 || t[n] >= classes) fail_target_range(t[n], n, classes);
}

// Calls f(Index{}) with the targets' integer type.
template <class F>
void dispatch_index(const Tensor& targets, F&& f) {
  switch (targets.dtype()) {
    case DType::i64: f(int64_t{}); return;
    case DType::i32: f(int32_t{}); return;
    default: fail("cross_entropy: targets must be i64 or i32 class indices, got ", targets.str());
  }
}

template <class T>
T* grad_or_null(GradSink& sink, size_t input, GradMode& mode) {
  return sink.needed(input) ? sink.buffer(input, mode).ptr<T>() : nullptr;
}

// Scratch for a loss forward's per-row terms or partial sums (none on the CPU).
Tensor loss_scratch(const Tensor& like, int64_t count) { return empty({count}, like.dtype(), like.device()); }

// The targets' shape [N] and device against logits [N, C].
void check_targets(const Tensor& logits, const Tensor& targets) {
  check(targets.shape() == Shape{logits.size(0)}, "cross_entropy: targets ", targets, " do not match logits ", logits,
        " (expected [", logits.size(0), "])");
  check(targets.device() == logits.device(), "cross_entropy: device mismatch between ", logits, " and ", targets);
}

// cross_entropy once the targets are known to lie in [0, C).
Tensor cross_entropy_checked(const Tensor& logits, const Tensor& targets) {
  const int64_t rows = logits.size(0), classes = logits.size(1);
  Tensor out = empty({}, logits.dtype(), logits.device());
  Tensor lse = empty({rows}, logits.dtype(), logits.device());
  dispatch_index(targets, [&](auto index_zero) {
    using Index = decltype(index_zero);
    dispatch_floating(logits.dtype(), "cross_entropy", [&](auto zero) {
      using T = decltype(zero);
      on_device(logits.device(), [&](auto k) {
        Tensor row_terms = loss_scratch(logits, k.cross_entropy_scratch_size(rows));
        k.cross_entropy_forward(logits.ptr<T>(), targets.ptr<Index>(), lse.ptr<T>(), row_terms.ptr<T>(), out.ptr<T>(),
                                rows, classes);
      });
    });
  });
  record(out, "cross_entropy", {logits}, [logits, targets, lse, rows, classes](const Tensor& g, GradSink& sink) {
    dispatch_index(targets, [&](auto index_zero) {
      using Index = decltype(index_zero);
      dispatch_floating(g.dtype(), "cross_entropy backward", [&](auto zero) {
        using T = decltype(zero);
        GradMode mode;
        Tensor& dlogits = sink.buffer(0, mode);
        const bool overwrite = mode == GradMode::Overwrite;
        on_device(logits.device(), [&](auto k) {
          k.cross_entropy_backward(logits.ptr<T>(), targets.ptr<Index>(), lse.ptr<T>(), g.ptr<T>(), dlogits.ptr<T>(),
                                   rows, classes, overwrite);
        });
      });
    });
  });
  return out;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  check_logits("cross_entropy", logits);
  check_defined("cross_entropy", targets, "targets");
  check_targets(logits, targets);
  dispatch_index(targets, [&](auto index_zero) {
    check_target_range<decltype(index_zero)>(targets.to(Device::cpu()), logits.size(1));
  });
  return cross_entropy_checked(logits, targets);
}

Tensor cross_entropy(const Tensor& logits, const HostIndex& targets) {
  check_logits("cross_entropy", logits);
  check_targets(logits, targets.tensor());
  const int64_t bad = targets.first_outside(logits.size(1));
  if (bad >= 0) fail_target_range(targets.host()[static_cast<size_t>(bad)], bad, logits.size(1));
  return cross_entropy_checked(logits, targets.tensor());
}

Tensor cross_entropy_soft(const Tensor& logits, const Tensor& target_probs) {
  check_logits("cross_entropy_soft", logits);
  check_same_dtype_device("cross_entropy_soft", logits, target_probs);
  check(target_probs.shape() == logits.shape(), "cross_entropy_soft: target_probs ", target_probs,
        " do not match logits ", logits);
  const int64_t rows = logits.size(0), classes = logits.size(1);
  Tensor out = empty({}, logits.dtype(), logits.device());
  Tensor lse = empty({rows}, logits.dtype(), logits.device());
  dispatch_floating(logits.dtype(), "cross_entropy_soft", [&](auto zero) {
    using T = decltype(zero);
    on_device(logits.device(), [&](auto k) {
      Tensor row_terms = loss_scratch(logits, k.cross_entropy_scratch_size(rows));
      k.cross_entropy_soft_forward(logits.ptr<T>(), target_probs.ptr<T>(), lse.ptr<T>(), row_terms.ptr<T>(),
                                   out.ptr<T>(), rows, classes);
    });
  });
  record(out, "cross_entropy_soft", {logits, target_probs},
         [logits, target_probs, lse, rows, classes](const Tensor& g, GradSink& sink) {
           dispatch_floating(g.dtype(), "cross_entropy_soft backward", [&](auto zero) {
             using T = decltype(zero);
             GradMode logits_mode = GradMode::Overwrite, probs_mode = GradMode::Overwrite;
             T* dlogits = grad_or_null<T>(sink, 0, logits_mode);
             T* dprobs = grad_or_null<T>(sink, 1, probs_mode);
             const bool overwrite_logits = logits_mode == GradMode::Overwrite;
             const bool overwrite_probs = probs_mode == GradMode::Overwrite;
             on_device(logits.device(), [&](auto k) {
               k.cross_entropy_soft_backward(logits.ptr<T>(), target_probs.ptr<T>(), lse.ptr<T>(), g.ptr<T>(), dlogits,
                                             overwrite_logits, dprobs, overwrite_probs, rows, classes);
             });
           });
         });
  return out;
}

Tensor mse_loss(const Tensor& a, const Tensor& b) {
  check_floating("mse_loss", a);
  check_same_dtype_device("mse_loss", a, b);
  check(a.shape() == b.shape(), "mse_loss: shapes differ: ", a, " vs ", b);
  check(a.numel() > 0, "mse_loss: inputs ", a, " are empty; the mean over no elements is undefined");
  const int64_t n = a.numel();
  Tensor out = empty({}, a.dtype(), a.device());
  dispatch_floating(a.dtype(), "mse_loss", [&](auto zero) {
    using T = decltype(zero);
    on_device(a.device(), [&](auto k) {
      Tensor partials = loss_scratch(a, k.mse_scratch_size(n));
      k.mse_forward(a.ptr<T>(), b.ptr<T>(), partials.ptr<T>(), out.ptr<T>(), n);
    });
  });
  record(out, "mse_loss", {a, b}, [a, b, n](const Tensor& g, GradSink& sink) {
    dispatch_floating(g.dtype(), "mse_loss backward", [&](auto zero) {
      using T = decltype(zero);
      GradMode a_mode = GradMode::Overwrite, b_mode = GradMode::Overwrite;
      T* da = grad_or_null<T>(sink, 0, a_mode);
      T* db = grad_or_null<T>(sink, 1, b_mode);
      const bool overwrite_a = a_mode == GradMode::Overwrite, overwrite_b = b_mode == GradMode::Overwrite;
      on_device(a.device(), [&](auto k) {
        k.mse_backward(a.ptr<T>(), b.ptr<T>(), g.ptr<T>(), da, overwrite_a, db, overwrite_b, n);
      });
    });
  });
  return out;
}

}  // namespace mcdl
