// Where a tensor's storage lives. Ops pick their kernels from it through engine/backend.h.
#pragma once
#include <ostream>
#include <string>

namespace mcdl {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

// Prints str(): a check's message can take the device itself and format it only on failure.
inline std::ostream& operator<<(std::ostream& os, const Device& device) { return os << device.str(); }

// The device a program runs on, from a user's choice: "cpu", "cuda" (fails with a clear
// message when no usable GPU is present) or "auto" (the GPU when one is usable, otherwise the
// CPU, saying so in one line on stderr).
Device select_device(const std::string& request);

// Bytes of memory free on `device` now (0 for the CPU, which has no such budget): what a cache
// may take a share of. Memory the engine's pool keeps for reuse counts as used.
size_t device_memory_free(Device device);

// Releases what the process holds on the GPU (cuda::release_device: library handles, workspaces,
// plans, the engine stream, the pool's cached blocks), warning on stderr if GPU tensors are still
// alive (their memory cannot be returned). Nothing to do without a GPU. The tools call it before
// main returns (tools::run_tool), and the test runner after the suite, so that
// compute-sanitizer's leak check finds nothing at exit; a later GPU op makes them afresh.
void release_device_resources();

}  // namespace mcdl
