#include "engine/ops/method.h"

#include "engine/backend.h"

namespace mcdl {
namespace {

int64_t ring_length(const BankRings& rings) { return rings.classes.size(1); }
int64_t class_count(const BankRings& rings) { return rings.probs.size(2); }

void check_samples(const char* op, const BankRings& rings, const Tensor& samples) {
  check(samples.defined() && samples.dtype() == DType::i64 && samples.dim() == 1 &&
            samples.device() == rings.classes.device(),
        op, ": samples must be i64 [n] on ", rings.classes.device(), ", got ", samples);
}

void check_consistency(const char* which, const Consistency& c, int64_t n, Device device) {
  for (const Tensor* t : {&c.mode, &c.count})
    check(t->defined() && t->dtype() == DType::i64 && t->dim() == 1 && t->numel() == n && t->device() == device,
          "credibility_buckets: ", which, " mode and count must be i64 [", n, "] on ", device, ", got ", *t);
}

}  // namespace

void bank_update(BankRings& rings, const Tensor& samples, const Tensor& probs) {
  check_samples("bank_update", rings, samples);
  const int64_t n = samples.numel(), classes = class_count(rings);
  check(probs.defined() && probs.dtype() == DType::f32 && probs.dim() == 2 && probs.size(0) == n &&
            probs.size(1) == classes && probs.device() == samples.device(),
        "bank_update: probs must be f32 [", n, ", ", classes, "] on ", samples.device(), ", got ", probs);
  on_device(samples.device(), [&](auto k) {
    Tensor scratch = empty({k.bank_update_scratch_per_row * n}, DType::i64, samples.device());
    k.bank_update(samples.ptr<int64_t>(), probs.ptr<float>(), n, classes, ring_length(rings),
                  rings.classes.ptr<int32_t>(), rings.probs.ptr<float>(), rings.position.ptr<int64_t>(),
                  rings.filled.ptr<int64_t>(), scratch.ptr<int64_t>());
  });
}

Consistency bank_consistency(const BankRings& rings, const Tensor& samples) {
  check_samples("bank_consistency", rings, samples);
  const int64_t n = samples.numel();
  Consistency out{empty({n}, DType::i64, samples.device()), empty({n}, DType::i64, samples.device())};
  on_device(samples.device(), [&](auto k) {
    k.bank_consistency(samples.ptr<int64_t>(), n, ring_length(rings), rings.classes.ptr<int32_t>(),
                       rings.position.ptr<int64_t>(), rings.filled.ptr<int64_t>(), out.mode.ptr<int64_t>(),
                       out.count.ptr<int64_t>());
  });
  return out;
}

Tensor bank_mean_probs(const BankRings& rings, const Tensor& samples) {
  check_samples("bank_mean_probs", rings, samples);
  const int64_t n = samples.numel(), classes = class_count(rings);
  Tensor out = empty({n, classes}, DType::f32, samples.device());
  on_device(samples.device(), [&](auto k) {
    k.bank_mean_probs(samples.ptr<int64_t>(), n, classes, ring_length(rings), rings.probs.ptr<float>(),
                      rings.filled.ptr<int64_t>(), out.ptr<float>());
  });
  return out;
}

Tensor credibility_buckets(const Consistency& weak, const Consistency& strong, int64_t mu) {
  check(mu > 0, "credibility_buckets: mu must be positive, got ", mu);
  check(weak.mode.defined(), "credibility_buckets: weak mode is undefined");
  const int64_t n = weak.mode.numel();
  const Device device = weak.mode.device();
  check_consistency("weak", weak, n, device);
  check_consistency("strong", strong, n, device);
  Tensor out = empty({n}, DType::u8, device);
  on_device(device, [&](auto k) {
    k.credibility_buckets(weak.mode.ptr<int64_t>(), weak.count.ptr<int64_t>(), strong.mode.ptr<int64_t>(),
                          strong.count.ptr<int64_t>(), n, mu, out.ptr<uint8_t>());
  });
  return out;
}

}  // namespace mcdl
