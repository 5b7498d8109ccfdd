#include "engine/storage.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/error.h"

namespace mcdl {
namespace {
std::atomic<int64_t> cpu_live_bytes{0};
std::atomic<bool> poison_flag{false};
constexpr size_t cpu_alignment = 64;  // a cache line, and enough for any vector load
}  // namespace

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (!device.is_cpu()) fail("Storage: device ", device.str(), " is not available in this build");
  size_t rounded = (bytes + cpu_alignment - 1) / cpu_alignment * cpu_alignment;
  if (rounded == 0) rounded = cpu_alignment;
  data_ = std::aligned_alloc(cpu_alignment, rounded);
  if (!data_) fail("Storage: out of host memory allocating ", bytes, " bytes");
  if (poison_flag.load(std::memory_order_relaxed)) std::memset(data_, 0xFF, rounded);
  cpu_live_bytes += static_cast<int64_t>(bytes_);
}

Storage::~Storage() {
  std::free(data_);
  cpu_live_bytes -= static_cast<int64_t>(bytes_);
}

int64_t storage_live_bytes(Device device) { return device.is_cpu() ? cpu_live_bytes.load() : 0; }

void set_poison_new_storage(bool on) { poison_flag = on; }
bool poison_new_storage() { return poison_flag; }

}  // namespace mcdl
