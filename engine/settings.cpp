#include "engine/settings.h"

#include <atomic>

#include "kernels/cuda/launch_config.h"

namespace mcdl {
namespace {

// constinit: already the defaults when another file's static initializer allocates storage.
constinit std::atomic<EngineSettings> current{EngineSettings{}};
static_assert(std::atomic<EngineSettings>::is_always_lock_free, "engine_settings() must stay a plain load");

void make_current(const EngineSettings& settings) {
  cuda::set_block_size_override(settings.block_size_override);  // validates it first
  current.store(settings);
}

}  // namespace

EngineSettings engine_settings() { return current.load(std::memory_order_relaxed); }

ScopedEngineSettings::ScopedEngineSettings(const EngineSettings& settings) : previous_(engine_settings()) {
  make_current(settings);
}

ScopedEngineSettings::~ScopedEngineSettings() { make_current(previous_); }

}  // namespace mcdl
