#include "kernels/cuda/random.h"

#include "kernels/cuda/elementwise_launch.h"
#include "kernels/philox.h"

namespace mcdl::cuda {
namespace {

template <class T>
constexpr uint64_t words_per_element = sizeof(T) == 4 ? 1 : 2;

// low + (high − low)·u in double with the multiply and add rounded separately (no FMA
// contraction, which the CPU does not do either), rounded to T, kept below high.
template <class T>
__device__ __forceinline__ T scale_into(double u, double low, double span, double high, T below_high) {
  const T value = static_cast<T>(__dadd_rn(low, __dmul_rn(span, u)));
  return static_cast<double>(value) >= high ? below_high : value;
}

// Thread b computes Philox block first_block + b (four words) once and writes every element
// whose first word lies in it. With two words per element and an odd first word, an element
// can start on a block's last word; its second word is word 0 of the next block.
template <class T>
__global__ void uniform_kernel(T* out, int64_t n, uint64_t seed, uint64_t stream, uint64_t first_word,
                               int64_t blocks, double low, double span, double high, T below_high) {
  constexpr uint64_t words = words_per_element<T>;
  const uint64_t first_block = first_word >> 2;
  for (int64_t b = grid_index(); b < blocks; b += grid_stride()) {
    const uint64_t position = first_block + static_cast<uint64_t>(b);
    const PhiloxBlock block = philox_block(seed, stream, position);
    for (uint64_t k = 0; k < 4; ++k) {
      const uint64_t word = position * 4 + k;
      if (word < first_word || (word - first_word) % words != 0) continue;
      const uint64_t element = (word - first_word) / words;
      if (element >= static_cast<uint64_t>(n)) break;
      double u;
      if constexpr (words == 1) {
        u = static_cast<double>(philox_uniform_float(block.word[k]));
      } else {
        const uint32_t low_word = k < 3 ? block.word[k + 1] : philox_block(seed, stream, position + 1).word[0];
        u = philox_uniform_double(block.word[k], low_word);
      }
      out[element] = scale_into<T>(u, low, span, high, below_high);
    }
  }
}

}  // namespace

template <class T>
void uniform(T* out, int64_t n, uint64_t seed, uint64_t stream, uint64_t first_word, double low, double high,
             T below_high) {
  if (n <= 0) return;
  // The Philox blocks holding the first word of each element.
  const uint64_t last_first_word = first_word + static_cast<uint64_t>(n - 1) * words_per_element<T>;
  const int64_t blocks = static_cast<int64_t>((last_first_word >> 2) - (first_word >> 2) + 1);
  launch(uniform_kernel<T>, elementwise_grid(blocks), dim3(elementwise_block()), 0, engine_stream(), out, n, seed,
         stream, first_word, blocks, low, high - low, high, below_high);
}

template void uniform<float>(float*, int64_t, uint64_t, uint64_t, uint64_t, double, double, float);
template void uniform<double>(double*, int64_t, uint64_t, uint64_t, uint64_t, double, double, double);

}  // namespace mcdl::cuda
