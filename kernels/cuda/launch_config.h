// Block sizes of the engine's kernels. Each launcher asks block_size(preferred); tests set an
// override so that every kernel also runs (and is checked) at a second block size.
#pragma once

namespace mcdl::cuda {

// 0 = no override. Otherwise a multiple of 32 in [32, 1024] that every launcher uses
// instead of its preferred size.
void set_block_size_override(unsigned threads);
unsigned block_size_override();

inline unsigned block_size(unsigned preferred) {
  const unsigned forced = block_size_override();
  return forced ? forced : preferred;
}

}  // namespace mcdl::cuda
