// NumPy's legacy random generator (np.random.seed / RandomState, numpy 1.24), far enough to
// reproduce the draws the GCD reference makes: `np.random.seed(s)` followed by
// `np.random.choice(range(n), size, replace=False)` (the labelled subset, the ImageNet-100
// classes).
//
// Seeding an int s calls mt19937_seed (Matsumoto–Nishimura init_genrand), exactly what
// std::mt19937(s) does, and the 32-bit outputs are genrand_int32; both are fixed by the C++
// standard, so std::mt19937 is the bit generator here.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace mcdl {

class NumpyLegacyRandom {
 public:
  explicit NumpyLegacyRandom(uint32_t seed) : mt_(seed) {}

  uint32_t next_uint32() { return static_cast<uint32_t>(mt_()); }
  // mt19937's next_uint64: two 32-bit outputs, the first one high.
  uint64_t next_uint64();
  // distributions.c random_interval: uniform in [0, max] by rejection on the smallest
  // all-ones mask >= max (32-bit draws while max fits in 32 bits).
  uint64_t random_interval(uint64_t max);
  // RandomState.permutation(n): arange(n) shuffled by _shuffle_raw (Fisher–Yates from the top,
  // j = random_interval(i) for i = n-1 .. 1).
  std::vector<int64_t> permutation(int64_t n);

 private:
  std::mt19937 mt_;
};

// np.random.seed(seed); np.random.choice(n, size, replace=False) — which RandomState.choice
// computes as permutation(n)[:size]. Throws if size > n or either is negative.
std::vector<int64_t> numpy_legacy_choice_without_replacement(uint32_t seed, int64_t n, int64_t size);

}  // namespace mcdl
