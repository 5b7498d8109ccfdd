#include "data/numpy_random.h"

#include <numeric>
#include <utility>

#include "engine/error.h"

namespace mcdl {

uint64_t NumpyLegacyRandom::next_uint64() {
  const uint64_t high = next_uint32();
  return (high << 32) | next_uint32();
}

uint64_t NumpyLegacyRandom::random_interval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  uint64_t value;
  if (max <= 0xffffffffULL) {
    while ((value = (next_uint32() & mask)) > max) {
    }
  } else {
    while ((value = (next_uint64() & mask)) > max) {
    }
  }
  return value;
}

std::vector<int64_t> NumpyLegacyRandom::permutation(int64_t n) {
  check(n >= 0, "numpy permutation: negative length ", n);
  std::vector<int64_t> values(static_cast<size_t>(n));
  std::iota(values.begin(), values.end(), int64_t{0});
  for (int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(random_interval(static_cast<uint64_t>(i)));
    std::swap(values[static_cast<size_t>(i)], values[static_cast<size_t>(j)]);
  }
  return values;
}

std::vector<int64_t> numpy_legacy_choice_without_replacement(uint32_t seed, int64_t n, int64_t size) {
  check(n >= 0 && size >= 0, "numpy choice: negative population ", n, " or sample size ", size);
  check(size <= n, "numpy choice: cannot take a sample of ", size, " from a population of ", n,
        " without replacement");
  NumpyLegacyRandom random(seed);
  std::vector<int64_t> values = random.permutation(n);
  values.resize(static_cast<size_t>(size));
  return values;
}

}  // namespace mcdl
