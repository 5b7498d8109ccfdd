#include "engine/random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "engine/backend.h"
#include "engine/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/philox.h"

namespace mcdl {
namespace {

// The splitmix64 finaliser: a bijective 64-bit mix with full avalanche.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Probability that N(0, 1) falls in [alpha, beta], accurate in either tail.
double normal_interval_probability(double alpha, double beta) {
  const double s = 1.0 / std::numbers::sqrt2;
  if (alpha > 0) return 0.5 * (std::erfc(alpha * s) - std::erfc(beta * s));
  if (beta < 0) return 0.5 * (std::erfc(-beta * s) - std::erfc(-alpha * s));
  return 1.0 - 0.5 * (std::erfc(-alpha * s) + std::erfc(beta * s));
}

// Below this acceptance rate rejection sampling of a truncated normal would crawl.
constexpr double min_trunc_normal_acceptance = 1e-4;

void check_trunc_normal_args(const char* op, double mean, double std, double a, double b) {
  check(std::isfinite(mean) && std::isfinite(std) && std > 0, op, ": expected a finite mean and std > 0, got mean ",
        mean, ", std ", std);
  check(a < b, op, ": expected a < b, got [", a, ", ", b, "]");
  const double p = normal_interval_probability((a - mean) / std, (b - mean) / std);
  check(p >= min_trunc_normal_acceptance, op, ": [", a, ", ", b, "] holds probability ", p, " of N(", mean, ", ",
        std, "^2); rejection sampling needs at least ", min_trunc_normal_acceptance);
}

// Where a uniform value that rounds up to `high` goes: the T just below it.
template <class T>
T below_high(double high) {
  return std::nextafter(static_cast<T>(high), -std::numeric_limits<T>::infinity());
}

// low + (high − low)·u in double, rounded to T and kept below high (rounding can reach it).
// The uniform kernels (kernels/cpu/random.h, kernels/cuda/random.cu) compute the same, bit for bit.
template <class T>
T scale_into(double u, double low, double high) {
  T value = static_cast<T>(low + (high - low) * u);
  if (static_cast<double>(value) >= high) value = below_high<T>(high);
  return value;
}

void check_float_dtype(const char* op, DType dtype) {
  check(dtype == DType::f32 || dtype == DType::f64, op, ": expected dtype f32 or f64, got ", dtype_name(dtype));
}

// Fills out[i] = draw(stream at word counter + i·words_per_element) in parallel chunks, each
// from its own copy of the stream, then advances `stream` past all the words: the result is
// the same as drawing in order on one thread.
template <class T, class Draw>
void fill_fixed_words(T* out, int64_t n, RandomStream& stream, uint64_t words_per_element, Draw draw) {
  constexpr int64_t chunk = 4096;
  const int64_t chunks = (n + chunk - 1) / chunk;
  const uint64_t start = stream.counter();
  cpu::parallel_rows(chunks, chunk * static_cast<int64_t>(words_per_element), [&](int64_t c) {
    const int64_t begin = c * chunk, end = std::min(n, begin + chunk);
    RandomStream local(stream.seed(), stream.stream(), start + static_cast<uint64_t>(begin) * words_per_element);
    for (int64_t i = begin; i < end; ++i) out[i] = draw(local);
  });
  stream = RandomStream(stream.seed(), stream.stream(), start + static_cast<uint64_t>(n) * words_per_element);
}

}  // namespace

uint64_t stream_id(std::string_view name, std::initializer_list<int64_t> indices) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a 64 offset basis
  for (char ch : name) {
    h ^= static_cast<uint8_t>(ch);
    h *= 0x100000001B3ull;  // FNV prime
  }
  for (int64_t index : indices) h = mix64(h + 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index));
  return h;
}

RandomStream::RandomStream(uint64_t seed, uint64_t stream, uint64_t counter)
    : seed_(seed), stream_(stream), counter_(counter) {}

uint32_t RandomStream::next_u32() {
  const uint64_t position = counter_ >> 2;
  if (position != cached_position_) {
    const PhiloxBlock block = philox_block(seed_, stream_, position);
    std::copy(block.word, block.word + 4, cached_words_);
    cached_position_ = position;
  }
  return cached_words_[counter_++ & 3];
}

uint64_t RandomStream::next_u64() {
  const uint64_t high = next_u32();
  return (high << 32) | next_u32();
}

float RandomStream::uniform_float() { return philox_uniform_float(next_u32()); }

double RandomStream::uniform_double() {
  const uint32_t high = next_u32();
  return philox_uniform_double(high, next_u32());
}

double RandomStream::uniform(double low, double high) { return scale_into<double>(uniform_double(), low, high); }

int64_t RandomStream::randint(int64_t low, int64_t high) {
  check(low < high, "randint: empty range [", low, ", ", high, ")");
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  uint64_t offset;
  if (range <= std::numeric_limits<uint32_t>::max()) {
    const uint32_t r = static_cast<uint32_t>(range);
    uint64_t m = static_cast<uint64_t>(next_u32()) * r;
    if (static_cast<uint32_t>(m) < r) {
      const uint32_t threshold = static_cast<uint32_t>(-r) % r;  // 2^32 mod r
      while (static_cast<uint32_t>(m) < threshold) m = static_cast<uint64_t>(next_u32()) * r;
    }
    offset = m >> 32;
  } else {
    unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * range;
    if (static_cast<uint64_t>(m) < range) {
      const uint64_t threshold = (0 - range) % range;  // 2^64 mod range
      while (static_cast<uint64_t>(m) < threshold) m = static_cast<unsigned __int128>(next_u64()) * range;
    }
    offset = static_cast<uint64_t>(m >> 64);
  }
  return static_cast<int64_t>(static_cast<uint64_t>(low) + offset);
}

double RandomStream::normal(double mean, double std) {
  const double u1 = 1.0 - uniform_double();  // (0, 1]: log stays finite
  const double u2 = uniform_double();
  return mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double RandomStream::trunc_normal(double mean, double std, double a, double b) {
  check_trunc_normal_args("trunc_normal", mean, std, a, b);
  for (;;) {
    const double x = normal(mean, std);
    if (x >= a && x <= b) return x;
  }
}

double RandomStream::log_gamma_variate(double alpha) {
  if (alpha < 1.0) {  // Gamma(α) = Gamma(α + 1)·U^(1/α)
    const double u = 1.0 - uniform_double();
    return log_gamma_variate(alpha + 1.0) + std::log(u) / alpha;
  }
  const double d = alpha - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal();
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = uniform_double();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2 || std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return std::log(d * v);
  }
}

double RandomStream::gamma(double alpha) {
  check(std::isfinite(alpha) && alpha > 0, "gamma: expected a finite shape alpha > 0, got ", alpha);
  return std::exp(log_gamma_variate(alpha));
}

double RandomStream::beta(double a, double b) {
  check(std::isfinite(a) && std::isfinite(b) && a > 0 && b > 0, "beta: expected finite shapes a, b > 0, got ", a,
        ", ", b);
  const double log_x = log_gamma_variate(a), log_y = log_gamma_variate(b);
  return 1.0 / (1.0 + std::exp(log_y - log_x));
}

std::vector<int64_t> RandomStream::permutation(int64_t n) {
  check(n >= 0, "permutation: n must be >= 0, got ", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(randint(0, i + 1))]);
  }
  return order;
}

std::vector<int64_t> RandomStream::weighted_sample(const std::vector<double>& weights, int64_t k) {
  check(k >= 0, "weighted_sample: k must be >= 0, got ", k);
  check(!weights.empty(), "weighted_sample: no weights given");
  std::vector<double> cumulative(weights.size());
  double total = 0.0;
  size_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    check(std::isfinite(weights[i]) && weights[i] >= 0, "weighted_sample: weight ", i, " is ", weights[i],
          "; weights must be finite and non-negative");
    if (weights[i] > 0) last_positive = i;
    total += weights[i];
    cumulative[i] = total;
  }
  check(total > 0, "weighted_sample: all ", weights.size(), " weights are zero");
  std::vector<int64_t> picks(static_cast<size_t>(k));
  for (int64_t& pick : picks) {
    const double target = uniform_double() * total;
    // The first index whose cumulative weight exceeds the target: zero weights are never hit.
    const size_t index = static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), target) -
                                             cumulative.begin());
    pick = static_cast<int64_t>(std::min(index, last_positive));  // target rounded up to total
  }
  return picks;
}

Tensor rand_uniform(const Shape& shape, DType dtype, RandomStream& stream, double low, double high, Device device) {
  check_float_dtype("rand_uniform", dtype);
  check(std::isfinite(low) && std::isfinite(high) && low < high, "rand_uniform: expected finite low < high, got [",
        low, ", ", high, ")");
  Tensor out = empty(shape, dtype, device);
  dispatch_floating(dtype, "rand_uniform", [&](auto zero) {
    using T = decltype(zero);
    // Element i takes the words at counter + i·words_per_element, as drawing uniform_float (one
    // word) or uniform_double (two) in order would, on either device.
    const uint64_t start = stream.counter(), words_per_element = sizeof(T) == 4 ? 1 : 2;
    const int64_t n = out.numel();
    on_device(device, [&](auto k) {
      k.uniform(out.ptr<T>(), n, stream.seed(), stream.stream(), start, low, high, below_high<T>(high));
    });
    stream = RandomStream(stream.seed(), stream.stream(), start + static_cast<uint64_t>(n) * words_per_element);
  });
  return out;
}

Tensor rand_normal(const Shape& shape, DType dtype, RandomStream& stream, double mean, double std, Device device) {
  check_float_dtype("rand_normal", dtype);
  check(std::isfinite(mean) && std::isfinite(std) && std >= 0, "rand_normal: expected a finite mean and std >= 0, got "
        "mean ", mean, ", std ", std);
  Tensor out = empty(shape, dtype);
  dispatch_floating(dtype, "rand_normal", [&](auto zero) {
    using T = decltype(zero);
    fill_fixed_words(out.data<T>(), out.numel(), stream, 4,
                     [&](RandomStream& s) { return static_cast<T>(s.normal(mean, std)); });
  });
  return out.to(device);  // drawn on the host: log and cos could differ in the last bit on a device
}

Tensor rand_trunc_normal(const Shape& shape, DType dtype, RandomStream& stream, double mean, double std, double a,
                         double b, Device device) {
  check_float_dtype("rand_trunc_normal", dtype);
  check_trunc_normal_args("rand_trunc_normal", mean, std, a, b);
  Tensor out = empty(shape, dtype);
  void* data = out.raw_data();
  for (int64_t i = 0; i < out.numel(); ++i) write_from_double(data, dtype, i, stream.trunc_normal(mean, std, a, b));
  return out.to(device);
}

Tensor rand_int(const Shape& shape, int64_t low, int64_t high, RandomStream& stream, Device device) {
  check(low < high, "rand_int: empty range [", low, ", ", high, ")");
  Tensor out = empty(shape, DType::i64);
  int64_t* values = out.data<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) values[i] = stream.randint(low, high);
  return out.to(device);  // drawn in order on the host: rejection uses a varying number of words
}

Tensor rand_permutation(int64_t n, RandomStream& stream, Device device) {
  check(n >= 0, "rand_permutation: n must be >= 0, got ", n);
  return from_vector(stream.permutation(n), {n}, device);
}

}  // namespace mcdl
