#include "mcdl/credibility.h"

#include "kernels/cpu/memory_bank.h"
#include "kernels/cuda/memory_bank.h"

namespace mcdl {
namespace {

void check_consistency(const char* which, const Consistency& c, int64_t n, Device device) {
  for (const Tensor* t : {&c.mode, &c.count})
    check(t->defined() && t->dtype() == DType::i64 && t->dim() == 1 && t->numel() == n && t->device() == device,
          "credibility_buckets: ", which, " mode and count must be i64 [", n, "] on ", device.str(), ", got ",
          t->defined() ? t->str() : std::string("undefined"));
}

}  // namespace

Tensor credibility_buckets(const Consistency& weak, const Consistency& strong, int64_t mu) {
  check(mu > 0, "credibility_buckets: mu must be positive, got ", mu);
  check(weak.mode.defined(), "credibility_buckets: weak mode is undefined");
  const int64_t n = weak.mode.numel();
  const Device device = weak.mode.device();
  check_consistency("weak", weak, n, device);
  check_consistency("strong", strong, n, device);
  Tensor out = empty({n}, DType::u8, device);
  switch (device.type) {
    case DeviceType::cpu:
      cpu::credibility_buckets(weak.mode.data<int64_t>(), weak.count.data<int64_t>(), strong.mode.data<int64_t>(),
                               strong.count.data<int64_t>(), n, mu, out.data<uint8_t>());
      break;
    case DeviceType::cuda:
      cuda::credibility_buckets(weak.mode.ptr<int64_t>(), weak.count.ptr<int64_t>(), strong.mode.ptr<int64_t>(),
                                strong.count.ptr<int64_t>(), n, mu, out.ptr<uint8_t>());
      break;
  }
  return out;
}

BucketCounts count_buckets(const Tensor& buckets) {
  check(buckets.defined() && buckets.dtype() == DType::u8 && buckets.dim() == 1,
        "count_buckets: expected a u8 [n] bucket tensor, got ", buckets.defined() ? buckets.str() : "undefined");
  BucketCounts counts;
  for (uint8_t b : buckets.to_vector<uint8_t>()) {
    switch (static_cast<Bucket>(b)) {
      case Bucket::high: ++counts.high; break;
      case Bucket::medium: ++counts.medium; break;
      case Bucket::low: ++counts.low; break;
      default: fail("count_buckets: value ", int{b}, " is not a bucket");
    }
  }
  return counts;
}

std::vector<int64_t> rows_in_bucket(const Tensor& buckets, Bucket bucket) {
  check(buckets.defined() && buckets.dtype() == DType::u8 && buckets.dim() == 1,
        "rows_in_bucket: expected a u8 [n] bucket tensor, got ", buckets.defined() ? buckets.str() : "undefined");
  const std::vector<uint8_t> values = buckets.to_vector<uint8_t>();
  std::vector<int64_t> rows;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] == static_cast<uint8_t>(bucket)) rows.push_back(static_cast<int64_t>(i));
  return rows;
}

}  // namespace mcdl
