// Uniform random buffers on the host, the CPU twin of kernels/cuda/random.h: element i takes
// the Philox words of the stream at first_word + i·words_per_element (1 word for float, 2 for
// double) through kernels/philox.h, the same words a RandomStream reads in order.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "kernels/philox.h"

namespace mcdl::cpu {

// out[i] = low + (high − low)·u_i computed in double and rounded to T, where u_i is
// philox_uniform_float (T = float) or philox_uniform_double (T = double) of element i's
// words; a value that rounds to high or above becomes below_high (the T just below high).
// Chunks of elements run in parallel, each reading its words in order, one Philox block per
// four words.
template <class T>
void uniform(T* out, int64_t n, uint64_t seed, uint64_t stream, uint64_t first_word, double low, double high,
             T below_high) {
  constexpr uint64_t words = sizeof(T) == 4 ? 1 : 2;
  constexpr int64_t chunk = 4096;
  const int64_t chunks = (n + chunk - 1) / chunk;
  parallel_rows(chunks, chunk * static_cast<int64_t>(words), [&](int64_t c) {
    const int64_t begin = c * chunk, end = std::min(n, begin + chunk);
    uint64_t word = first_word + static_cast<uint64_t>(begin) * words, position = ~uint64_t{0};
    PhiloxBlock block{};
    const auto next_word = [&] {
      if (word >> 2 != position) {
        position = word >> 2;
        block = philox_block(seed, stream, position);
      }
      return block.word[word++ & 3];
    };
    for (int64_t i = begin; i < end; ++i) {
      double u;
      if constexpr (words == 1) {
        u = philox_uniform_float(next_word());
      } else {
        const uint32_t high_word = next_word();
        u = philox_uniform_double(high_word, next_word());
      }
      const T value = static_cast<T>(low + (high - low) * u);
      out[i] = static_cast<double>(value) >= high ? below_high : value;
    }
  });
}

}  // namespace mcdl::cpu
