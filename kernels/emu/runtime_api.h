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

#include <algorithm>
#include <chrono>

#include "kernels/emu/live_objects.h"
#include "kernels/emu/profile_ranges.h"  // the host waits, as marks
#include "kernels/emu/shared_opt_in.h"
#include "kernels/emu/stream_capture.h"
#include "kernels/emu/vector_types.h"

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorNoDevice = 100,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureImplicit = 906
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
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
  }
  return "unknown error";
}
inline const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
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
// Waiting for a stream that is being captured fails and invalidates the capture, as on a GPU.
inline cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (mcdl::emu::capturing(stream)) {
    mcdl::emu::invalidate_capture();
    return cudaErrorStreamCaptureUnsupported;
  }
  mcdl::emu::observe_frees();
  mcdl::emu::record_mark("host_wait");
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() {
  if (!mcdl::emu::stream_usable(nullptr)) return cudaErrorStreamCaptureUnsupported;
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
// Events are not recorded into captures here (CUDA allows it; the project never does it).
inline cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (mcdl::emu::capturing(stream)) {
    mcdl::emu::invalidate_capture();
    return cudaErrorStreamCaptureUnsupported;
  }
  if (!mcdl::emu::stream_usable(stream)) return cudaErrorStreamCaptureImplicit;
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

// A kernel's grant of dynamic shared memory above the default 48 KB (shared_opt_in.h); up to the
// 227 KB of an sm_90 block.
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
template <class... Params>
cudaError_t cudaFuncSetAttribute(void (*kernel)(Params...), cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      static_cast<size_t>(value) > mcdl::emu::detail::max_dynamic_shared_bytes)
    return cudaErrorInvalidValue;
  mcdl::emu::detail::SharedOptIn::instance().grant(reinterpret_cast<uintptr_t>(kernel), static_cast<size_t>(value));
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

namespace mcdl::emu {
// Returns a block of cudaMallocAsync's to the pool; false when it is not one (or freed twice).
inline bool free_pool_block(void* ptr) {
  LiveObjects& live = live_objects();
  {
    std::lock_guard<std::mutex> lock(live.mutex);
    const auto found = live.allocations.find(ptr);
    if (found == live.allocations.end()) return false;
    live.pending_free_bytes += found->second;
    live.allocations.erase(found);
  }
  std::free(ptr);
  return true;
}
}  // namespace mcdl::emu

// On a stream being captured the block belongs to the graph (stream_capture.h).
inline cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream) {
  if (!mcdl::emu::stream_usable(stream)) return cudaErrorStreamCaptureImplicit;
  const size_t rounded = (bytes + 255) / 256 * 256;
  *ptr = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
  if (!*ptr) return cudaErrorMemoryAllocation;
  {
    mcdl::emu::LiveObjects& live = mcdl::emu::live_objects();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.allocations[*ptr] = rounded;
  }
  mcdl::emu::StreamCapture& capture = mcdl::emu::stream_capture();
  std::lock_guard<std::mutex> lock(capture.mutex);
  if (capture.stream && capture.stream == stream) {
    capture.work->memory->blocks.push_back(*ptr);
    capture.live_blocks.push_back(*ptr);
  }
  return cudaSuccess;
}
// During a capture only a block the capture allocated may be freed on its stream (CUDA would also
// free older memory at every replay; the project never asks for that).
inline cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  if (!mcdl::emu::stream_usable(stream)) return cudaErrorStreamCaptureImplicit;
  {
    mcdl::emu::StreamCapture& capture = mcdl::emu::stream_capture();
    std::lock_guard<std::mutex> lock(capture.mutex);
    if (capture.stream && capture.stream == stream) {
      auto& live = capture.live_blocks;
      for (auto block = live.begin(); block != live.end(); ++block)
        if (*block == ptr) {
          live.erase(block);
          return cudaSuccess;
        }
      capture.invalidated = true;
      return cudaErrorStreamCaptureUnsupported;
    }
  }
  return mcdl::emu::free_pool_block(ptr) ? cudaSuccess : cudaErrorInvalidValue;  // not from cudaMallocAsync, or freed twice
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
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
  if (!mcdl::emu::stream_usable(stream)) return cudaErrorStreamCaptureImplicit;
  if (bytes) mcdl::emu::on_stream(stream, [=] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  if (!mcdl::emu::stream_usable(stream)) return cudaErrorStreamCaptureImplicit;
  if (bytes) mcdl::emu::on_stream(stream, [=] { std::memset(dst, value, bytes); });
  return cudaSuccess;
}

// ---- Stream capture and graphs (stream_capture.h) ----------------------------------------------
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2
};
struct CUgraph_st {
  std::shared_ptr<mcdl::emu::CapturedWork> work;
};
struct CUgraphExec_st {
  std::shared_ptr<mcdl::emu::CapturedWork> work;
};
using cudaGraph_t = CUgraph_st*;
using cudaGraphExec_t = CUgraphExec_st*;

inline cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (!stream) return cudaErrorStreamCaptureUnsupported;  // the legacy stream cannot be captured
  mcdl::emu::StreamCapture& capture = mcdl::emu::stream_capture();
  std::lock_guard<std::mutex> lock(capture.mutex);
  if (capture.stream) return cudaErrorIllegalState;  // one capture at a time (stricter than CUDA)
  capture.stream = stream;
  capture.invalidated = false;
  capture.work = std::make_shared<mcdl::emu::CapturedWork>();
  capture.work->memory->release = [](void* block) { (void)mcdl::emu::free_pool_block(block); };
  capture.live_blocks.clear();
  return cudaSuccess;
}
inline cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  mcdl::emu::StreamCapture& capture = mcdl::emu::stream_capture();
  std::lock_guard<std::mutex> lock(capture.mutex);
  *status = !capture.stream || capture.stream != stream ? cudaStreamCaptureStatusNone
            : capture.invalidated                        ? cudaStreamCaptureStatusInvalidated
                                                         : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}
// Ends the capture; an invalidated one gives no graph (its memory is returned).
inline cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  std::shared_ptr<mcdl::emu::CapturedWork> work;
  bool invalidated = false;
  {
    mcdl::emu::StreamCapture& capture = mcdl::emu::stream_capture();
    std::lock_guard<std::mutex> lock(capture.mutex);
    if (!capture.stream || capture.stream != stream) return cudaErrorIllegalState;
    work = std::move(capture.work);
    // Blocks the capture did not free are the caller's from now on (CUDA: after the first launch).
    work->unfreed = capture.live_blocks.size();
    auto& owned = work->memory->blocks;
    for (void* block : capture.live_blocks) owned.erase(std::find(owned.begin(), owned.end(), block));
    invalidated = capture.invalidated;
    capture.stream = nullptr;
    capture.live_blocks.clear();
  }
  *graph = nullptr;
  if (invalidated) return cudaErrorStreamCaptureInvalidated;
  *graph = mcdl::emu::make_counted<CUgraph_st>("graphs", std::move(work));
  return cudaSuccess;
}
// Refuses a graph that leaves memory allocated to its caller (not emulated).
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph || graph->work->unfreed > 0) return cudaErrorInvalidValue;
  *exec = mcdl::emu::make_counted<CUgraphExec_st>("graph execs", graph->work);
  return cudaSuccess;
}
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec) return cudaErrorInvalidValue;
  if (!mcdl::emu::stream_usable(stream)) return cudaErrorStreamCaptureImplicit;
  if (mcdl::emu::capturing(stream)) {  // a graph inside a capture: not emulated
    mcdl::emu::invalidate_capture();
    return cudaErrorStreamCaptureUnsupported;
  }
  for (const auto& step : exec->work->steps) step();
  return cudaSuccess;
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  return mcdl::emu::destroy_counted(exec, "graph execs") ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return mcdl::emu::destroy_counted(graph, "graphs") ? cudaSuccess : cudaErrorInvalidValue;
}
