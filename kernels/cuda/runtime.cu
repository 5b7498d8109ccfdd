#include "kernels/cuda/runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/device_resource.h"

#ifdef __CUDACC__
#include <nvtx3/nvToolsExt.h>  // header-only: nothing to link
#else
#include "kernels/emu/profile_ranges.h"
#endif

namespace mcdl::cuda {
namespace {

// Whether the CUDA runtime sees a device, asked once: the answer does not change while the
// process runs. Selects device 0.
bool query_device() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
    (void)cudaGetLastError();  // clear the sticky error of a missing driver
    return false;
  }
  MCDL_CUDA_CHECK(cudaSetDevice(0));
  return true;
}

void require_device(const char* what) {
  if (!device_available())
    throw std::runtime_error(std::string(what) + ": no usable CUDA device (cudaGetDeviceCount found none)");
}

// The engine stream: made on first use, and again after release_device(). Read without the
// lock on every launch; made and destroyed under it.
struct EngineStream {
  std::mutex mutex;
  std::atomic<cudaStream_t> stream{nullptr};
};
EngineStream& engine() {
  static EngineStream* const instance = new EngineStream();  // never destroyed (see device_resource.h)
  return *instance;
}

cudaStream_t create_engine_stream() {
  cudaStream_t stream = nullptr;
  MCDL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Keep freed memory in the pool: a training step frees and reallocates the same sizes.
  cudaMemPool_t pool;
  MCDL_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t threshold = UINT64_MAX;
  MCDL_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  return stream;
}

struct Releases {
  std::mutex mutex;
  std::vector<std::function<void()>> list;  // in the order of creation
};
Releases& releases() {
  static Releases* const instance = new Releases();
  return *instance;
}

void report_if_failed(cudaError_t status, const char* what) {
  if (status != cudaSuccess) report_release_failure(what, std::string(cudaGetErrorName(status)) + ": " +
                                                              cudaGetErrorString(status));
}

// The capture in progress (CapturedGraph::capture): what it allocated and has not freed, and what
// it could not hold.
struct CaptureState {
  std::mutex mutex;
  // Read without the lock by every allocation and free, which take it only during a capture.
  std::atomic<bool> active{false};
  std::unordered_set<void*> allocated;  // during the capture, not yet freed in it
  std::vector<void*> frees_after;       // allocated before the capture, freed during it: freed after it
  std::string fault;                    // the first thing the graph could not hold
};
CaptureState& capture_state() {
  static CaptureState* const instance = new CaptureState();
  return *instance;
}

// Throws CaptureError for `what` (a host wait, an upload) during a capture.
void refuse_in_capture(const char* what) {
  if (capturing())
    throw CaptureError(std::string(what) + " cannot be part of a CUDA graph: the host would need the device's "
                       "results (or give it host memory) while the work is only being recorded");
}

}  // namespace

cudaStream_t engine_stream() {
  EngineStream& e = engine();
  if (const cudaStream_t stream = e.stream.load(std::memory_order_acquire)) return stream;
  if (!device_available()) return nullptr;
  std::lock_guard<std::mutex> lock(e.mutex);
  if (!e.stream.load(std::memory_order_relaxed)) e.stream.store(create_engine_stream(), std::memory_order_release);
  return e.stream.load(std::memory_order_relaxed);
}

bool device_available() {
  static const bool available = query_device();
  return available;
}

void at_device_release(std::function<void()> release) {
  Releases& r = releases();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.list.push_back(std::move(release));
}

void report_release_failure(const char* what, const std::string& detail) {
  std::fprintf(stderr, "warning: releasing %s failed: %s\n", what, detail.c_str());
}

// Never asks for the device itself: a program that did not use the GPU does not start the CUDA
// runtime at its exit.
void release_device() {
  // Newest first: a later object may use an earlier one (a workspace from the pool, a plan of a
  // handle). Each queues its frees on the engine stream.
  std::vector<std::function<void()>> list;
  {
    Releases& r = releases();
    std::lock_guard<std::mutex> lock(r.mutex);
    list.swap(r.list);
  }
  for (auto release = list.rbegin(); release != list.rend(); ++release) (*release)();
  EngineStream& e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  const cudaStream_t stream = e.stream.exchange(nullptr);
  if (!stream) return;  // never made: nothing was allocated or launched
  // A free counts as outstanding until a synchronize has seen it, and cudaMemPoolTrimTo cannot
  // return an outstanding block: wait for the stream first.
  report_if_failed(cudaStreamSynchronize(stream), "the engine stream's last work");
  cudaMemPool_t pool;
  const cudaError_t found = cudaDeviceGetDefaultMemPool(&pool, 0);
  report_if_failed(found, "the memory pool");
  if (found == cudaSuccess) report_if_failed(cudaMemPoolTrimTo(pool, 0), "the memory pool's cached blocks");
  report_if_failed(cudaStreamDestroy(stream), "the engine stream");
}

std::string device_description() {
  if (!device_available()) return "no CUDA device";
  cudaDeviceProp prop;
  MCDL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  char line[400];
  std::snprintf(line, sizeof line, "%s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1u << 30));
  return line;
}

DeviceMemory device_memory() {
  require_device("device_memory");
  (void)engine_stream();  // the device selected and its context made
  DeviceMemory memory;
  MCDL_CUDA_CHECK(cudaMemGetInfo(&memory.free, &memory.total));
  return memory;
}

void* device_alloc(size_t bytes) {
  require_device("device_alloc");
  void* pointer = nullptr;
  MCDL_CUDA_CHECK(cudaMallocAsync(&pointer, bytes == 0 ? 1 : bytes, engine_stream()));
  CaptureState& capture = capture_state();
  if (capture.active.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(capture.mutex);
    if (capture.active) capture.allocated.insert(pointer);
  }
  return pointer;
}

void device_free(void* pointer) {
  if (!pointer) return;
  if (CaptureState& capture = capture_state(); capture.active.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(capture.mutex);
    // Freeing older memory inside a graph would free it again at every replay: refused, and freed
    // once the capture has ended.
    if (capture.active && !capture.allocated.erase(pointer)) {
      capture.frees_after.push_back(pointer);
      if (capture.fault.empty())
        capture.fault = "device memory allocated before the capture was freed during it (a cache replaced?)";
      return;
    }
  }
  MCDL_CUDA_CHECK(cudaFreeAsync(pointer, engine_stream()));
}

void copy_device_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  refuse_in_capture("a copy to the host (copy_device_to_host)");
  MCDL_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, engine_stream()));
  MCDL_CUDA_CHECK(cudaStreamSynchronize(engine_stream()));
}

void copy_device_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes) MCDL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, engine_stream()));
}

void fill_bytes(void* device_dst, int byte_value, size_t bytes) {
  if (bytes) MCDL_CUDA_CHECK(cudaMemsetAsync(device_dst, byte_value, bytes, engine_stream()));
}

namespace {
// An event, destroyed however the timing ends.
struct Event {
  cudaEvent_t event = nullptr;
  Event() { MCDL_CUDA_CHECK(cudaEventCreate(&event)); }
  ~Event() { (void)cudaEventDestroy(event); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};
}  // namespace

double time_on_device_ms(void (*work)(void*), void* context, int repeats) {
  require_device("time_on_device_ms");
  work(context);  // warm-up: first-use costs (handles, pools, module loading)
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const Event start, stop;
    MCDL_CUDA_CHECK(cudaEventRecord(start.event, engine_stream()));
    work(context);
    MCDL_CUDA_CHECK(cudaEventRecord(stop.event, engine_stream()));
    MCDL_CUDA_CHECK(cudaEventSynchronize(stop.event));
    float ms = 0;
    MCDL_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event, stop.event));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void synchronize() {
  refuse_in_capture("a wait for the device (synchronize)");
  if (device_available()) MCDL_CUDA_CHECK(cudaStreamSynchronize(engine_stream()));
}

bool capturing() { return capture_state().active.load(std::memory_order_acquire); }

void refuse_upload_in_capture() { refuse_in_capture("an upload from host memory (copy_host_to_device)"); }

std::unique_ptr<CapturedGraph> CapturedGraph::capture(const std::function<void()>& work) {
  require_device("CapturedGraph::capture");
  const cudaStream_t stream = engine_stream();
  CaptureState& state = capture_state();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.active) throw CaptureError("a CUDA graph capture is already in progress");
    MCDL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    state.active = true;
  }
  std::exception_ptr failure;
  try {
    work();
  } catch (...) {
    failure = std::current_exception();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  size_t kept = 0;
  std::vector<void*> frees_after;
  std::string fault;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.active = false;
    kept = state.allocated.size();
    state.allocated.clear();
    frees_after.swap(state.frees_after);
    fault.swap(state.fault);
  }
  for (void* pointer : frees_after) device_free(pointer);
  auto discard = [&] {
    if (graph) report_if_failed(cudaGraphDestroy(graph), "a CUDA graph");
  };
  if (failure) {
    discard();
    std::rethrow_exception(failure);
  }
  if (!fault.empty()) {
    discard();
    throw CaptureError("CUDA graph capture: " + fault);
  }
  if (ended != cudaSuccess) {
    discard();
    throw CaptureError(std::string("CUDA graph capture: the runtime refused it: ") + cudaGetErrorName(ended) + ": " +
                       cudaGetErrorString(ended));
  }
  if (kept > 0) {
    discard();
    throw std::logic_error("CUDA graph capture: " + std::to_string(kept) +
                           " device allocations made during the capture outlived it (memory a graph owns is valid "
                           "only inside it): run the work once before capturing it, so that its caches exist");
  }
  cudaGraphExec_t executable = nullptr;
  if (const cudaError_t made = cudaGraphInstantiate(&executable, graph, 0); made != cudaSuccess) {
    discard();
    throw CaptureError(std::string("CUDA graph capture: cudaGraphInstantiate failed: ") + cudaGetErrorName(made) +
                       ": " + cudaGetErrorString(made));
  }
  return std::unique_ptr<CapturedGraph>(new CapturedGraph(graph, executable));
}

CapturedGraph::~CapturedGraph() {
  report_if_failed(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(executable_)), "a CUDA graph's executable");
  report_if_failed(cudaGraphDestroy(static_cast<cudaGraph_t>(graph_)), "a CUDA graph");
}

void CapturedGraph::replay() {
  MCDL_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(executable_), engine_stream()));
}

void profile_range_push(const char* name) {
#ifdef __CUDACC__
  nvtxRangePushA(name);
#else
  emu::record_range_push(name);
#endif
}

void profile_range_pop() {
#ifdef __CUDACC__
  nvtxRangePop();
#else
  emu::record_range_pop();
#endif
}

}  // namespace mcdl::cuda
