// Parallel loops over host memory for code above the engine (k-means on the host): the CPU
// kernels' OpenMP helpers, with the same guarantees (deterministic_sum adds fixed chunks in a
// fixed order, whatever the thread count).
#pragma once
#include "kernels/cpu/parallel.h"

namespace mcdl {

using cpu::deterministic_sum;
using cpu::parallel_rows;

}  // namespace mcdl
