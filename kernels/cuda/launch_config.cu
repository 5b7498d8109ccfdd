#include "kernels/cuda/launch_config.h"

#include <atomic>
#include <stdexcept>
#include <string>

namespace mcdl::cuda {
namespace {
std::atomic<unsigned> forced_block_size{0};
}

void set_block_size_override(unsigned threads) {
  if (threads != 0 && (threads % 32 != 0 || threads > 1024))
    throw std::invalid_argument("set_block_size_override: expected 0 or a multiple of 32 up to 1024, got " +
                                std::to_string(threads));
  forced_block_size = threads;
}

unsigned block_size_override() { return forced_block_size; }

}  // namespace mcdl::cuda
