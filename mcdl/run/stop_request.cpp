#include "mcdl/run/stop_request.h"

#include <atomic>

namespace mcdl {
namespace {
std::atomic<bool> requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler sets the flag");
}  // namespace

void request_stop() { requested.store(true); }
bool stop_requested() { return requested.load(); }
void clear_stop_request() { requested.store(false); }

}  // namespace mcdl
