// Random numbers from counter-based Philox streams. A stream is the triple (seed, stream id,
// counter): the counter is the number of 32-bit words already consumed, so a draw depends
// only on that triple, never on thread count or on what else ran before. Stream ids come
// from a name and indices, e.g. RandomStream(seed, stream_id("augment", {sample, view})).
// The triple is the whole state, so a checkpoint stores seed(), stream(), counter() and
// resumes with RandomStream(seed, stream, counter).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "engine/tensor.h"

namespace mcdl {

// A fixed 64-bit hash: FNV-1a over the name's bytes, then each index mixed in turn
// (order matters: {1, 2} and {2, 1} give different ids).
uint64_t stream_id(std::string_view name, std::initializer_list<int64_t> indices = {});

class RandomStream {
 public:
  RandomStream(uint64_t seed, uint64_t stream, uint64_t counter = 0);

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }
  uint64_t counter() const { return counter_; }  // 32-bit words consumed so far

  // The next word: the four words of each Philox block in order.
  uint32_t next_u32();
  // Two words, the first as the high half.
  uint64_t next_u64();
  // (u32 >> 8)·2^-24 in [0, 1): one word, the formula the device kernels use.
  float uniform_float();
  // 53 bits of two words in [0, 1).
  double uniform_double();
  // Uniform in [low, high) from uniform_double().
  double uniform(double low, double high);
  // Unbiased integer in [low, high): Lemire's multiply-shift with rejection (one word per
  // try when the range fits in 32 bits, two otherwise).
  int64_t randint(int64_t low, int64_t high);
  // Box–Muller in double (the cosine branch only, so the state stays the counter): 4 words.
  double normal(double mean = 0.0, double std = 1.0);
  // N(mean, std²) restricted to [a, b] by rejection (a and b in absolute units, like
  // torch.nn.init.trunc_normal_).
  double trunc_normal(double mean, double std, double a, double b);
  // Gamma(alpha, 1): Marsaglia–Tsang, with the U^(1/alpha) boost for alpha < 1.
  double gamma(double alpha);
  // Beta(a, b) as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b), formed from the logarithms so
  // that tiny shapes (mixup's alpha = 0.2) do not underflow to 0/0.
  double beta(double a, double b);
  // A uniformly random permutation of 0..n-1 (Fisher–Yates).
  std::vector<int64_t> permutation(int64_t n);
  // k indices drawn with replacement with probability proportional to `weights`
  // (torch.multinomial(replacement=True), WeightedRandomSampler): cumulative sum, then a
  // binary search per uniform. Weights must be finite, non-negative and not all zero.
  std::vector<int64_t> weighted_sample(const std::vector<double>& weights, int64_t k);

 private:
  double log_gamma_variate(double alpha);  // log of a Gamma(alpha) draw

  uint64_t seed_, stream_, counter_;
  // The Philox block that holds word counter_ (a cache; not part of the state).
  uint64_t cached_position_ = ~uint64_t{0};
  uint32_t cached_words_[4] = {0, 0, 0, 0};
};

// ---- tensor creators. Each advances `stream` past the words it used. -------------------
// The values do not depend on `device`: uniforms on a CUDA device come from a kernel that
// reads the same words (bit for bit the CPU's); everything else is drawn on the host and
// copied (values that go through log, cos or rejection are drawn on the host so that they are
// identical on every device).
// f32 element i is low + (high − low)·uniform_float(word counter + i); f64 uses two words
// per element (uniform_double). Values lie in [low, high).
Tensor rand_uniform(const Shape& shape, DType dtype, RandomStream& stream, double low = 0.0, double high = 1.0,
                    Device device = Device::cpu());
// Element i is normal(mean, std) from words [counter + 4i, counter + 4i + 4).
Tensor rand_normal(const Shape& shape, DType dtype, RandomStream& stream, double mean = 0.0, double std = 1.0,
                   Device device = Device::cpu());
// trunc_normal draws in order on the host (rejection uses a varying number of words).
Tensor rand_trunc_normal(const Shape& shape, DType dtype, RandomStream& stream, double mean, double std, double a,
                         double b, Device device = Device::cpu());
// i64 values uniform in [low, high), drawn in order.
Tensor rand_int(const Shape& shape, int64_t low, int64_t high, RandomStream& stream, Device device = Device::cpu());
// i64 [n]: a random permutation of 0..n-1.
Tensor rand_permutation(int64_t n, RandomStream& stream, Device device = Device::cpu());

}  // namespace mcdl
