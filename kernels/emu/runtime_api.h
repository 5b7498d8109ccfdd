// The part of the CUDA runtime API the project calls, for emulator builds: "device" memory is
// host memory, every call completes at once (launches are synchronous too), and the number of
// devices is whatever the program sets (0 by default, so a build without nvcc is a CPU-only
// build; the emulated test binary sets 1). Streams, events and pool memory are counted while
// they live (live_objects.h), so a test can check that everything created is released.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <chrono>

#include "kernels/emu/live_objects.h"
#include "kernels/emu/profile_ranges.h"  // the host waits, as marks
#include "kernels/emu/vector_types.h"

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorNoDevice = 100,
  cudaErrorNotReady = 600
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDisableTiming = 2;
constexpr unsigned cudaHostAllocDefault = 0;

struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount;
  size_t totalGlobalMem;
};

namespace mcdl::emu {
inline int& emulated_device_count() {
  static int count = 0;
  return count;
}
// Makes the emulated runtime report `count` devices (tests: 1).
inline void set_device_count(int count) { emulated_device_count() = count; }
// The emulated device's memory in bytes (16 GiB; tests may change it): cudaGetDeviceProperties'
// total, and cudaMemGetInfo's, whose free part is what the live allocations leave.
inline size_t& emulated_device_memory() {
  static size_t bytes = size_t(1) << 34;
  return bytes;
}
}  // namespace mcdl::emu

inline const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorNotReady: return "device not ready";
  }
  return "unknown error";
}
inline const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorNotReady: return "cudaErrorNotReady";
  }
  return "cudaErrorUnknown";
}
inline cudaError_t cudaGetLastError() { return cudaSuccess; }

inline cudaError_t cudaGetDeviceCount(int* count) {
  *count = mcdl::emu::emulated_device_count();
  return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}
inline cudaError_t cudaSetDevice(int device) {
  return device >= 0 && device < mcdl::emu::emulated_device_count() ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (cudaSetDevice(device) != cudaSuccess) return cudaErrorInvalidValue;
  std::memset(prop, 0, sizeof(*prop));
  std::strcpy(prop->name, "CUDA emulator on the CPU");
  prop->major = 9;
  prop->multiProcessorCount = 1;
  prop->totalGlobalMem = mcdl::emu::emulated_device_memory();
  return cudaSuccess;
}

struct CUstream_st {};  // a stream only has to be a distinct, countable object here
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = mcdl::emu::make_counted<CUstream_st>("streams");
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return mcdl::emu::destroy_counted(stream, "streams") ? cudaSuccess : cudaErrorInvalidValue;
}
// Each call that makes the host wait for the device is marked "host_wait" in a recording of the
// profiler ranges: a test counts a training step's waits, which on a GPU stall the host.
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  mcdl::emu::observe_frees();
  mcdl::emu::record_mark("host_wait");
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() {
  mcdl::emu::observe_frees();
  mcdl::emu::record_mark("host_wait");
  return cudaSuccess;
}

// Events record the host clock: every call before a record has finished when it returns.
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
};
using cudaEvent_t = CUevent_st*;
inline cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = mcdl::emu::make_counted<CUevent_st>("events");
  return cudaSuccess;
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) { return cudaEventCreate(event); }
inline cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return mcdl::emu::destroy_counted(event, "events") ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  event->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) {
  mcdl::emu::observe_frees();
  mcdl::emu::record_mark("host_wait");
  return cudaSuccess;
}
// Recorded work has always finished.
inline cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }

// Page-locked host memory: plain host memory here, counted while it lives.
inline cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned) {
  *ptr = std::malloc(bytes == 0 ? 1 : bytes);
  if (!*ptr) return cudaErrorMemoryAllocation;
  mcdl::emu::count_object("pinned host buffers", 1);
  return cudaSuccess;
}
inline cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  std::free(ptr);
  mcdl::emu::count_object("pinned host buffers", -1);
  return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}

// The device's default stream-ordered pool (see live_objects.h for what is modelled).
struct CUmemPoolHandle_st {};
using cudaMemPool_t = CUmemPoolHandle_st*;
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  static CUmemPoolHandle_st default_pool;
  if (cudaSetDevice(device) != cudaSuccess) return cudaErrorInvalidValue;
  *pool = &default_pool;
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  if (!pool || attr != cudaMemPoolAttrReleaseThreshold || !value) return cudaErrorInvalidValue;
  mcdl::emu::LiveObjects& live = mcdl::emu::live_objects();
  std::lock_guard<std::mutex> lock(live.mutex);
  std::memcpy(&live.release_threshold, value, sizeof live.release_threshold);
  return cudaSuccess;
}
// Returns kept blocks until at most min_bytes_to_keep remain; frees no synchronize has seen yet
// count as outstanding, as on a GPU.
inline cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t min_bytes_to_keep) {
  if (!pool) return cudaErrorInvalidValue;
  mcdl::emu::LiveObjects& live = mcdl::emu::live_objects();
  std::lock_guard<std::mutex> lock(live.mutex);
  if (live.idle_pool_bytes > min_bytes_to_keep) live.idle_pool_bytes = min_bytes_to_keep;
  return cudaSuccess;
}

inline cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t) {
  const size_t rounded = (bytes + 255) / 256 * 256;
  *ptr = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
  if (!*ptr) return cudaErrorMemoryAllocation;
  mcdl::emu::LiveObjects& live = mcdl::emu::live_objects();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.allocations[*ptr] = rounded;
  return cudaSuccess;
}
inline cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) {
  mcdl::emu::LiveObjects& live = mcdl::emu::live_objects();
  {
    std::lock_guard<std::mutex> lock(live.mutex);
    const auto found = live.allocations.find(ptr);
    if (found == live.allocations.end()) return cudaErrorInvalidValue;  // not from cudaMallocAsync, or freed twice
    live.pending_free_bytes += found->second;
    live.allocations.erase(found);
  }
  std::free(ptr);
  return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (mcdl::emu::emulated_device_count() == 0) return cudaErrorNoDevice;
  size_t used = 0;
  {
    mcdl::emu::LiveObjects& live = mcdl::emu::live_objects();
    std::lock_guard<std::mutex> lock(live.mutex);
    for (const auto& allocation : live.allocations) used += allocation.second;
  }
  *total = mcdl::emu::emulated_device_memory();
  *free = used < *total ? *total - used : 0;
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t) {
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t) {
  if (bytes) std::memset(dst, value, bytes);
  return cudaSuccess;
}
