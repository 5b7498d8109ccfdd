// The order in which the emulator runs the threads (and blocks) of a launch. A race such as a
// missing __syncthreads can be invisible in one order and break every element in another, so
// kernel tests run under all three orders (for_each_thread_order).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

namespace mcdl::emu {

enum class ThreadOrder { forward, reverse, shuffled };

inline const char* to_string(ThreadOrder order) {
  switch (order) {
    case ThreadOrder::forward:
      return "forward";
    case ThreadOrder::reverse:
      return "reverse";
    case ThreadOrder::shuffled:
      return "shuffled";
  }
  return "?";
}

namespace detail {
inline std::atomic<ThreadOrder> selected_order{ThreadOrder::forward};
inline std::atomic<uint64_t> selected_seed{1};

inline uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Rearranges `ids` (given in ascending order) into the selected order. Each scheduling point
// passes its own `stream` (block and round), so a shuffled run depends only on the seed and
// repeats exactly.
template <class Id>
void arrange(std::vector<Id>& ids, uint64_t stream) {
  switch (selected_order.load()) {
    case ThreadOrder::forward:
      return;
    case ThreadOrder::reverse:
      std::reverse(ids.begin(), ids.end());
      return;
    case ThreadOrder::shuffled: {
      uint64_t state = mix64(selected_seed.load() ^ mix64(stream));
      for (size_t i = ids.size(); i > 1; --i) {
        state = mix64(state);
        std::swap(ids[i - 1], ids[state % i]);
      }
      return;
    }
  }
}
}  // namespace detail

inline void set_thread_order(ThreadOrder order) { detail::selected_order = order; }
inline ThreadOrder thread_order() { return detail::selected_order; }
inline void set_shuffle_seed(uint64_t seed) { detail::selected_seed = seed; }
inline uint64_t shuffle_seed() { return detail::selected_seed; }

// Calls body(order) under forward, reverse and shuffled order, then restores the previous order.
template <class Body>
void for_each_thread_order(Body&& body) {
  struct Restore {
    ThreadOrder saved = thread_order();
    ~Restore() { set_thread_order(saved); }
  } restore;
  for (ThreadOrder order : {ThreadOrder::forward, ThreadOrder::reverse, ThreadOrder::shuffled}) {
    set_thread_order(order);
    body(order);
  }
}

}  // namespace mcdl::emu
