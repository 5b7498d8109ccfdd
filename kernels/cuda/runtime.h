// The CUDA device as the engine sees it: availability, memory from a stream-ordered pool and
// explicit copies. Plain C++ (no CUDA headers), so engine code can include it. In a build
// without nvcc these run on the CPU emulator, which reports no device.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mcdl::cuda {

// True when the CUDA runtime reports at least one device. Any error from cudaGetDeviceCount
// (no driver, no device) counts as none. Cached after the first call.
bool device_available();
// One line for logs, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)".
std::string device_description();

// The device's memory now (cudaMemGetInfo): bytes free (memory the engine's pool keeps for reuse
// counts as used) and in all.
struct DeviceMemory {
  size_t free = 0, total = 0;
};
DeviceMemory device_memory();

// Memory from the stream-ordered pool (cudaMallocAsync on the engine stream; the pool keeps
// freed memory for reuse instead of returning it to the driver).
void* device_alloc(size_t bytes);
void device_free(void* pointer);

// Returns at once, the host buffer free for reuse: the bytes go through page-locked staging
// memory (kernels/cuda/upload_staging.cu), and the host waits only when that is full of copies
// the device has not yet run, or for an upload above 64 MB.
void copy_host_to_device(void* device_dst, const void* host_src, size_t bytes);
// The same for several host buffers laid back to back from device_dst, in one copy to the device
// (a batch's images, without first packing them into one host buffer).
struct HostPart {
  const void* data;
  size_t bytes;
};
void copy_host_parts_to_device(void* device_dst, const std::vector<HostPart>& parts);
void copy_device_to_host(void* host_dst, const void* device_src, size_t bytes);  // waits for the data
void copy_device_to_device(void* dst, const void* src, size_t bytes);
void fill_bytes(void* device_dst, int byte_value, size_t bytes);
// Milliseconds of device time that `work` takes, measured with events on the engine stream
// (the median of `repeats` runs after one warm-up run). For benchmarks.
double time_on_device_ms(void (*work)(void*), void* context, int repeats);

// Waits until all queued work on the engine stream has finished (errors inside kernels show here).
void synchronize();

// A CUDA graph of the engine stream's work: a fixed sequence of kernels, copies and library calls
// recorded once (stream capture) and replayed with one launch, the host's per-kernel launch cost
// gone. A replay reads and writes the addresses the recording used, with the host values (kernel
// arguments, scales) it had then.
class CapturedGraph {
 public:
  // Records, instead of running, the device work that `work` queues on the engine stream. Throws
  // CaptureError, with the engine stream as it was before, when `work` does what a graph cannot
  // hold: a host wait for the device (a read-back), an upload from host memory, the free of memory
  // allocated before the capture. The device memory `work` allocates becomes the graph's, with
  // its address fixed for every replay, so `work` must free all of it (its intermediates);
  // memory it keeps (a cache filled during the capture) is a logic_error: run `work` once before
  // capturing it. An exception from `work` itself ends the capture and is rethrown.
  static std::unique_ptr<CapturedGraph> capture(const std::function<void()>& work);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  // Queues the recorded work on the engine stream.
  void replay();

 private:
  CapturedGraph(void* graph, void* executable) : graph_(graph), executable_(executable) {}
  void* graph_;       // cudaGraph_t
  void* executable_;  // cudaGraphExec_t
};

// Why a capture could not be made (CapturedGraph::capture).
struct CaptureError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// True while CapturedGraph::capture records the engine stream's work.
bool capturing();

// Releases everything the engine holds on the GPU: the libraries' plans, handles and workspaces
// (cuBLASLt, cuBLAS), newest first, then the engine stream once its work has finished,
// then the pool's cached blocks (returned to the driver). Used again afterwards, the engine
// makes them afresh. Blocks of tensors still alive cannot be returned: call it once they are
// gone, with no GPU work running on another thread. Failures are reported on stderr, never
// thrown. Called explicitly before main returns (tools::run_tool, the test runner), not from a
// static destructor: the CUDA runtime tears itself down in an atexit handler, and a CUDA call
// after that is an error (cudaErrorCudartUnloading).
void release_device();

// A named range on a profiler's timeline (NVTX: Nsight Systems shows the ranges of each host
// thread, nested, above the kernels they launched); a pop closes the calling thread's innermost
// range. Without a profiler attached a call costs a load and a branch (the first one looks for a
// profiler). In the emulator build the ranges go to its in-memory log instead
// (kernels/emu/profile_ranges.h).
void profile_range_push(const char* name);
void profile_range_pop();

}  // namespace mcdl::cuda
