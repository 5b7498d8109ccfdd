#include "mcdl/run/stop_request.h"

#include <atomic>
#include <vector>

namespace mcdl {
namespace {
std::atomic<bool> requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler sets the flag");
std::atomic<bool> agreeing{false}, agreed{false};  // several ranks: the last agreement
}  // namespace

void request_stop() { requested.store(true); }
bool stop_requested() { return agreeing.load() ? agreed.load() : requested.load(); }
void clear_stop_request() {
  requested.store(false);
  agreed.store(false);
}

void agree_on_stop(Collective& world) {
  if (world.size() == 1) return;
  agreeing.store(true);
  const char mine = requested.load() ? 1 : 0;
  std::vector<char> all(static_cast<size_t>(world.size()));
  world.all_gather(&mine, 1, all.data(), std::vector<size_t>(all.size(), 1));
  bool any = false;
  for (char flag : all) any = any || flag != 0;
  agreed.store(any);
}

}  // namespace mcdl
