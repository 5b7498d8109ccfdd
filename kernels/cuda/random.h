// Uniform random tensors on the device (the CUDA side of engine/random.cpp's rand_uniform):
// element i takes the Philox words of the stream at first_word + i·words_per_element
// (1 word for float, 2 for double) through kernels/philox.h, so a device tensor is bit for
// bit the CPU's for the same (seed, stream, counter).
#pragma once
#include <cstdint>

namespace mcdl::cuda {

// out[i] = low + (high − low)·u_i computed in double and rounded to T, where u_i is
// philox_uniform_float (T = float) or philox_uniform_double (T = double) of element i's
// words; a value that rounds to high or above becomes below_high (the T just below high).
template <class T>
void uniform(T* out, int64_t n, uint64_t seed, uint64_t stream, uint64_t first_word, double low, double high,
             T below_high);

}  // namespace mcdl::cuda
