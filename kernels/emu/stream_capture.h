// Stream capture for the emulator (CUDA graphs: cudaStreamBeginCapture ... cudaStreamEndCapture,
// then cudaGraphLaunch replays what was captured). The emulator runs device work at once on the
// calling thread; while a stream is being captured, the work queued on it (kernel launches, copies,
// fills, the emulated libraries' calls) is recorded instead, and each replay runs the records in
// order. As on a GPU:
//   - a record keeps its arguments as they were at capture (a kernel's parameters, a library
//     call's host scalars and descriptors), and reads and writes device memory when it is replayed;
//   - memory allocated on the stream during the capture belongs to the graph: its address is fixed
//     at capture and stays valid for every replay, and its free during the capture is the graph's
//     (the memory goes when the graph does);
//   - waiting for a stream that is being captured, or queueing work on the legacy default stream
//     (null) meanwhile, is an error that invalidates the capture (cudaErrorStreamCaptureUnsupported
//     / cudaErrorStreamCaptureImplicit), and cudaStreamEndCapture then returns no graph.
// Stricter than CUDA, and documented as such: one capture at a time in the process; events are not
// recorded into captures; a graph must free what it allocates (cudaGraphInstantiate refuses one
// that leaves memory to its caller). Not recorded: the emulated NCCL's collectives, which run at
// the call (no graph of the project holds a collective).
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/emu/live_objects.h"
#include "kernels/emu/vector_types.h"

namespace mcdl::emu {

// What a capture records: its work in order, and the memory it allocated (freed when the last
// graph or executable graph made from it goes).
struct CapturedWork {
  std::vector<std::function<void()>> steps;
  struct Memory {
    std::vector<void*> blocks;
    void (*release)(void*) = nullptr;  // returns one block to the pool
    ~Memory() {
      for (void* block : blocks) release(block);
    }
  };
  std::shared_ptr<Memory> memory = std::make_shared<Memory>();
  size_t unfreed = 0;  // blocks allocated in the capture and not freed in it
};

struct StreamCapture {
  std::mutex mutex;
  cudaStream_t stream = nullptr;  // being captured, or null
  bool invalidated = false;
  std::shared_ptr<CapturedWork> work;
  std::vector<void*> live_blocks;  // allocated in the capture, not yet freed in it
};

inline StreamCapture& stream_capture() {
  static StreamCapture* instance = new StreamCapture();  // never destroyed, as live_objects()
  return *instance;
}

// Whether `stream` is being captured.
inline bool capturing(cudaStream_t stream) {
  StreamCapture& c = stream_capture();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stream && c.stream == stream;
}

// Marks the capture in progress, if any, as failed (as CUDA, the emulator keeps no reason).
inline void invalidate_capture() {
  StreamCapture& c = stream_capture();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.stream) c.invalidated = true;
}

// False when `stream` may not take work now: it is the legacy default stream (null) while another
// stream is captured (the capture is invalidated, as CUDA does).
inline bool stream_usable(cudaStream_t stream) {
  StreamCapture& c = stream_capture();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (stream || !c.stream) return true;
  c.invalidated = true;
  return false;
}

// Runs `work` now, or records it when `stream` is being captured. `work` must hold by value
// whatever it reads from the host.
template <class F>
void on_stream(cudaStream_t stream, F&& work) {
  {
    StreamCapture& c = stream_capture();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.stream && c.stream == stream) {
      c.work->steps.emplace_back(std::forward<F>(work));
      return;
    }
  }
  work();
}

}  // namespace mcdl::emu
