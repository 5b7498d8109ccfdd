#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/random.h"
#include "kernels/philox.h"

using namespace mcdl;

namespace {

struct Moments {
  double mean, var;
};

template <class Draw>
Moments moments(int n, Draw draw) {
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double x = draw();
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / n;
  return {mean, sum_sq / n - mean * mean};
}

RandomStream test_stream() { return RandomStream(42, stream_id("test")); }

}  // namespace

TEST_CASE("philox: Random123 known-answer vectors for Philox4x32-10") {
  auto words = [](PhiloxBlock b) { return std::vector<uint32_t>(b.word, b.word + 4); };
  CHECK(words(philox4x32_10({{0, 0, 0, 0}}, 0, 0)) ==
        std::vector<uint32_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(words(philox4x32_10({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff)) ==
        std::vector<uint32_t>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(words(philox4x32_10({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0)) ==
        std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
  // The engine's layout: key = seed (low word first), counter = (position, stream).
  CHECK(words(philox_block(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull)) ==
        std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
  CHECK(philox_word(5, 6, 7) == philox_block(5, 6, 1).word[3]);
  CHECK(philox_uniform_float(0xffffffffu) == 1.0f - 1.0f / 16777216.0f);
  CHECK(philox_uniform_float(0xffu) == 0.0f);
  CHECK(philox_uniform_double(0xffffffffu, 0xffffffffu) == 1.0 - std::ldexp(1.0, -53));
}

TEST_CASE("random: stream ids are a fixed hash of name and indices") {
  // Pinned (an independent python FNV-1a + splitmix64 gives the same): ids must not change
  // between builds, or checkpoints would resume different streams.
  CHECK(stream_id("augment") == 0x6593e2d28bfde1d8ull);
  CHECK(stream_id("augment", {3, 1}) == 0x55c823bd4e5d2b70ull);
  CHECK(stream_id("augment", {1, 3}) != stream_id("augment", {3, 1}));
  CHECK(stream_id("augment", {0}) != stream_id("augment"));
  CHECK(stream_id("augment", {0}) != stream_id("augment", {0, 0}));
  CHECK(stream_id("dropout", {0}) != stream_id("augment", {0}));
}

TEST_CASE("random: draws depend only on (seed, stream, counter)") {
  RandomStream s = test_stream();
  // Pinned words (checked against an independent python Philox4x32-10).
  const std::vector<uint32_t> first = {3385433703u, 335017566u, 822355396u, 1042370695u, 12931301u, 178503029u};
  for (uint32_t w : first) CHECK(s.next_u32() == w);
  CHECK(s.counter() == 6);
  CHECK(s.seed() == 42);
  CHECK(s.stream() == stream_id("test"));

  // Resuming from a stored triple, mid-block, continues the same sequence.
  RandomStream resumed(42, stream_id("test"), 3);
  for (size_t i = 3; i < first.size(); ++i) CHECK(resumed.next_u32() == first[i]);
  RandomStream far(1ull << 40, 7, 1000);  // block 250
  CHECK(far.next_u32() == 3599220685u);
  CHECK(far.next_u32() == 3612685764u);

  // Another stream or seed gives other words.
  RandomStream other_stream(42, stream_id("test", {1})), other_seed(43, stream_id("test"));
  CHECK(other_stream.next_u32() != first[0]);
  CHECK(other_seed.next_u32() != first[0]);

  // Pinned derived draws.
  RandomStream u = test_stream();
  CHECK(u.uniform_float() == 0.788232684135437f);
  CHECK(u.uniform_float() == 0.07800233364105225f);
  RandomStream d = test_stream();
  CHECK(d.uniform_double() == 0.78823270813515456);
  CHECK(d.uniform_double() == 0.19146953621941987);
  RandomStream n = test_stream();
  CHECK(n.normal() == doctest::Approx(0.63347014829432202).epsilon(1e-14));
  CHECK(n.counter() == 4);
  RandomStream i = test_stream();
  std::vector<int64_t> ints;
  for (int k = 0; k < 8; ++k) ints.push_back(i.randint(0, 10));
  CHECK(ints == std::vector<int64_t>{7, 0, 1, 2, 0, 0, 0, 6});
  RandomStream wide = test_stream();
  CHECK(wide.randint(-5000000000LL, 5000000000LL) == 2882327081LL);
  CHECK(wide.counter() == 2);  // a range over 2^32 takes two words per try
  CHECK(test_stream().permutation(8) == std::vector<int64_t>{4, 2, 3, 7, 5, 1, 0, 6});
}

TEST_CASE("random: uniform, normal, gamma, beta and truncated normal statistics") {
  RandomStream s(7, stream_id("stats"));
  const int n = 100000;
  Moments m = moments(n, [&] { return s.uniform_float(); });
  CHECK(m.mean == doctest::Approx(0.5).epsilon(0.01));
  CHECK(m.var == doctest::Approx(1.0 / 12).epsilon(0.02));
  m = moments(n, [&] { return s.uniform_double(); });
  CHECK(m.mean == doctest::Approx(0.5).epsilon(0.01));
  CHECK(m.var == doctest::Approx(1.0 / 12).epsilon(0.02));
  m = moments(n, [&] { return s.uniform(-3.0, 5.0); });
  CHECK(m.mean == doctest::Approx(1.0).epsilon(0.03));
  CHECK(m.var == doctest::Approx(64.0 / 12).epsilon(0.02));
  m = moments(n, [&] { return s.normal(); });
  CHECK(std::fabs(m.mean) < 0.015);
  CHECK(std::sqrt(m.var) == doctest::Approx(1.0).epsilon(0.01));
  m = moments(n, [&] { return s.normal(2.0, 3.0); });
  CHECK(m.mean == doctest::Approx(2.0).epsilon(0.025));
  CHECK(std::sqrt(m.var) == doctest::Approx(3.0).epsilon(0.01));
  m = moments(n, [&] { return s.beta(0.5, 0.5); });  // mean 1/2, var 1/8
  CHECK(m.mean == doctest::Approx(0.5).epsilon(0.01));
  CHECK(m.var == doctest::Approx(0.125).epsilon(0.02));
  m = moments(n, [&] { return s.beta(0.2, 0.2); });  // mixup's alpha: var 1/(4·1.4)
  CHECK(m.mean == doctest::Approx(0.5).epsilon(0.01));
  CHECK(m.var == doctest::Approx(0.25 / 1.4).epsilon(0.02));
  m = moments(n, [&] { return s.beta(2.0, 6.0); });  // mean 1/4, var ab/((a+b)²(a+b+1))
  CHECK(m.mean == doctest::Approx(0.25).epsilon(0.01));
  CHECK(m.var == doctest::Approx(12.0 / (64 * 9)).epsilon(0.03));
  for (double alpha : {0.3, 1.0, 2.5}) {  // Gamma(α): mean α, var α
    CAPTURE(alpha);
    m = moments(n, [&] { return s.gamma(alpha); });
    CHECK(m.mean == doctest::Approx(alpha).epsilon(0.02));
    CHECK(m.var == doctest::Approx(alpha).epsilon(0.04));
  }
  // N(0, 1) on [-2, 2]: var 1 − 4φ(2)/(Φ(2) − Φ(−2)) = 0.773741.
  double lo = 1, hi = -1;
  m = moments(n, [&] {
    const double x = s.trunc_normal(0.0, 1.0, -2.0, 2.0);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    return x;
  });
  CHECK(lo >= -2.0);
  CHECK(hi <= 2.0);
  CHECK(std::fabs(m.mean) < 0.01);
  CHECK(m.var == doctest::Approx(0.773741).epsilon(0.02));
  lo = 3, hi = 0;
  for (int k = 0; k < 1000; ++k) {  // a one-sided window in the tail
    const double x = s.trunc_normal(1.0, 0.5, 2.0, 2.5);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  CHECK(lo >= 2.0);
  CHECK(hi <= 2.5);
}

TEST_CASE("random: integers hit every value of the range equally and stay in range") {
  RandomStream s(11, stream_id("ints"));
  std::vector<int> counts(7, 0);
  const int n = 70000;
  bool in_range = true;
  for (int k = 0; k < n; ++k) {
    const int64_t v = s.randint(-3, 4);
    in_range = in_range && v >= -3 && v < 4;
    if (in_range) ++counts[static_cast<size_t>(v + 3)];
  }
  CHECK(in_range);
  double chi2 = 0;
  for (int c : counts) chi2 += (c - 10000.0) * (c - 10000.0) / 10000.0;
  CHECK(chi2 < 30);  // 6 degrees of freedom: p ≈ 4e-5
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  int64_t wide_lo = max, wide_hi = min, full_hi = min;
  for (int k = 0; k < 1000; ++k) {
    const int64_t wide = s.randint(-(1LL << 40), 1LL << 41);
    wide_lo = std::min(wide_lo, wide);
    wide_hi = std::max(wide_hi, wide);
    full_hi = std::max(full_hi, s.randint(min, max));
  }
  CHECK(wide_lo >= -(1LL << 40));
  CHECK(wide_lo < -(1LL << 39));  // the draws spread over the whole range
  CHECK(wide_hi < (1LL << 41));
  CHECK(wide_hi > (1LL << 40));
  CHECK(full_hi < max);
  CHECK(s.randint(5, 6) == 5);
}

TEST_CASE("random: permutations and weighted sampling") {
  RandomStream s(3, stream_id("perm"));
  for (int64_t n : {0, 1, 2, 17, 1000}) {
    std::vector<int64_t> p = s.permutation(n);
    std::sort(p.begin(), p.end());
    std::vector<int64_t> identity(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) identity[static_cast<size_t>(i)] = i;
    CHECK(p == identity);
  }
  // Every position sees every value about equally often.
  std::vector<int> first_counts(4, 0);
  for (int k = 0; k < 40000; ++k) ++first_counts[static_cast<size_t>(s.permutation(4)[0])];
  for (int c : first_counts) CHECK(c == doctest::Approx(10000).epsilon(0.04));

  const std::vector<double> weights = {1.0, 0.0, 3.0, 6.0, 0.0};
  const std::vector<int64_t> picks = s.weighted_sample(weights, 100000);
  std::vector<int> counts(weights.size(), 0);
  for (int64_t p : picks) ++counts[static_cast<size_t>(p)];
  CHECK(counts[0] == doctest::Approx(10000).epsilon(0.04));
  CHECK(counts[1] == 0);
  CHECK(counts[2] == doctest::Approx(30000).epsilon(0.02));
  CHECK(counts[3] == doctest::Approx(60000).epsilon(0.02));
  CHECK(counts[4] == 0);
  CHECK(s.weighted_sample({0.0, 0.0, 2.5}, 10) == std::vector<int64_t>(10, 2));
  CHECK(s.weighted_sample(weights, 0).empty());
}

TEST_CASE("random: tensor creators draw the stream's words in order and advance it") {
  // f32 uniform: element i comes from word counter + i, whatever the thread count (the
  // tensor is large enough to be filled in parallel chunks).
  RandomStream s = test_stream();
  Tensor u = rand_uniform({300, 100}, DType::f32, s, -1.0, 3.0);
  CHECK(u.dtype() == DType::f32);
  CHECK(u.shape() == Shape{300, 100});
  CHECK(s.counter() == 30000);
  RandomStream ref = test_stream();
  const auto values = u.to_vector<float>();
  bool same = true, in_range = true;
  for (float v : values) {
    same = same && v == static_cast<float>(-1.0 + 4.0 * ref.uniform_float());
    in_range = in_range && v >= -1.0f && v < 3.0f;
  }
  CHECK(same);
  CHECK(in_range);

  // Rounding to f32 can reach `high`; such values move to the float just below it.
  RandomStream c = test_stream();
  const auto near_one = rand_uniform({1000}, DType::f32, c, 1.0 - 1e-7, 1.0 - 1e-10).to_vector<float>();
  CHECK(*std::max_element(near_one.begin(), near_one.end()) == std::nextafter(1.0f, 0.0f));

  RandomStream d = test_stream();
  Tensor ud = rand_uniform({5}, DType::f64, d);
  CHECK(d.counter() == 10);  // two words per f64
  CHECK(ud.to_vector<double>()[0] == 0.78823270813515456);

  RandomStream g = test_stream();
  Tensor normal = rand_normal({20000}, DType::f64, g, 1.0, 2.0);
  CHECK(g.counter() == 80000);
  RandomStream g_ref = test_stream();
  const auto nv = normal.to_vector<double>();
  CHECK(nv[0] == g_ref.normal(1.0, 2.0));
  RandomStream g_tail(42, stream_id("test"), 4 * 12345);
  CHECK(nv[12345] == g_tail.normal(1.0, 2.0));
  double mean = 0;
  for (double v : nv) mean += v / nv.size();
  CHECK(mean == doctest::Approx(1.0).epsilon(0.05));
  CHECK(rand_normal({3}, DType::f32, g).dtype() == DType::f32);

  RandomStream t(5, stream_id("trunc"));
  const auto tv = rand_trunc_normal({1000}, DType::f32, t, 0.0, 1.0, -0.5, 0.5).to_vector<float>();
  CHECK(*std::min_element(tv.begin(), tv.end()) >= -0.5f);
  CHECK(*std::max_element(tv.begin(), tv.end()) <= 0.5f);

  RandomStream r = test_stream();
  Tensor ints = rand_int({2, 4}, 0, 10, r);
  CHECK(ints.dtype() == DType::i64);
  CHECK(ints.to_vector<int64_t>() == std::vector<int64_t>{7, 0, 1, 2, 0, 0, 0, 6});
  CHECK(r.counter() == 8);

  RandomStream p = test_stream();
  Tensor perm = rand_permutation(8, p);
  CHECK(perm.dtype() == DType::i64);
  CHECK(perm.shape() == Shape{8});
  CHECK(perm.to_vector<int64_t>() == std::vector<int64_t>{4, 2, 3, 7, 5, 1, 0, 6});
  CHECK(rand_permutation(0, p).numel() == 0);
}

TEST_CASE("random: bad arguments throw with the operation's name") {
  RandomStream s = test_stream();
  CHECK_THROWS_WITH(s.randint(3, 3), doctest::Contains("randint: empty range [3, 3)"));
  CHECK_THROWS_WITH(s.gamma(0.0), doctest::Contains("gamma: expected a finite shape alpha > 0, got 0"));
  CHECK_THROWS_WITH(s.beta(0.5, -1.0), doctest::Contains("beta: expected finite shapes a, b > 0"));
  CHECK_THROWS_WITH(s.trunc_normal(0.0, 1.0, 1.0, -1.0), doctest::Contains("trunc_normal: expected a < b"));
  CHECK_THROWS_WITH(s.trunc_normal(0.0, 0.0, -1.0, 1.0),
                    doctest::Contains("trunc_normal: expected a finite mean and std > 0"));
  CHECK_THROWS_WITH(s.trunc_normal(0.0, 1.0, 8.0, 9.0), doctest::Contains("rejection sampling needs at least"));
  CHECK_THROWS_WITH(s.trunc_normal(0.0, 1.0, -9.0, -8.0), doctest::Contains("rejection sampling needs at least"));
  CHECK_THROWS_WITH(s.permutation(-1), doctest::Contains("permutation: n must be >= 0, got -1"));
  CHECK_THROWS_WITH(s.weighted_sample({0.0, 0.0}, 3), doctest::Contains("weighted_sample: all 2 weights are zero"));
  CHECK_THROWS_WITH(s.weighted_sample({1.0, -0.5}, 3), doctest::Contains("weighted_sample: weight 1 is -0.5"));
  CHECK_THROWS_WITH(s.weighted_sample({1.0, std::nan("")}, 3), doctest::Contains("weighted_sample: weight 1 is nan"));
  CHECK_THROWS_WITH(s.weighted_sample({}, 3), doctest::Contains("weighted_sample: no weights given"));
  CHECK_THROWS_WITH(s.weighted_sample({1.0}, -1), doctest::Contains("weighted_sample: k must be >= 0"));
  CHECK_THROWS_WITH(rand_uniform({2}, DType::i64, s),
                    doctest::Contains("rand_uniform: expected dtype f32 or f64, got i64"));
  CHECK_THROWS_WITH(rand_uniform({2}, DType::f32, s, 1.0, 1.0),
                    doctest::Contains("rand_uniform: expected finite low < high"));
  CHECK_THROWS_WITH(rand_uniform({-2}, DType::f32, s), doctest::Contains("negative dimension in shape [-2]"));
  CHECK_THROWS_WITH(rand_normal({2}, DType::bf16, s),
                    doctest::Contains("rand_normal: expected dtype f32 or f64, got bf16"));
  CHECK_THROWS_WITH(rand_normal({2}, DType::f32, s, 0.0, -1.0),
                    doctest::Contains("rand_normal: expected a finite mean and std >= 0"));
  CHECK_THROWS_WITH(rand_trunc_normal({2}, DType::f32, s, 0.0, 1.0, 2.0, 1.0),
                    doctest::Contains("rand_trunc_normal: expected a < b"));
  CHECK_THROWS_WITH(rand_int({2}, 5, 4, s), doctest::Contains("rand_int: empty range [5, 4)"));
  CHECK_THROWS_WITH(rand_permutation(-3, s), doctest::Contains("rand_permutation: n must be >= 0, got -3"));
  CHECK(s.counter() == 0);  // failed calls draw nothing
}
