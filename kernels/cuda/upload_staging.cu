// copy_host_to_device without waiting for the device: the bytes are copied into page-locked
// staging memory on the host, and the copy from there is queued on the engine stream, so the
// caller's buffer is free at once and the host never stalls behind queued kernels (a copy from
// pageable memory would need the stream synchronised first, to know when the source may go).
// The staging buffer is a ring (kernels/cuda/staging_spans.h); a span is reused once the event
// recorded after its copy has completed, which the host waits for only when the ring is full.
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/device_resource.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/staging_spans.h"

namespace mcdl::cuda {
namespace {

// A training step uploads its batch's resized images once per view (tens of MB at ViT-B/16
// sizes) and many small index and label tensors; the ring holds a few steps of them. Larger
// uploads (weights, once) go through a synchronised copy instead of growing the ring.
constexpr size_t staging_bytes = size_t{256} << 20;
constexpr size_t largest_staged = staging_bytes / 4;
constexpr size_t span_alignment = 256;

struct Staging {
  std::mutex mutex;
  char* buffer = nullptr;
  StagingSpans spans{staging_bytes};
  std::deque<cudaEvent_t> events;  // one per live span, oldest first
  std::vector<cudaEvent_t> spare;  // completed, for reuse
};

void report_if_failed(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    report_release_failure(what, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
}

void create_staging(Staging& staging) {
  MCDL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&staging.buffer), staging_bytes, cudaHostAllocDefault));
}

void destroy_staging(Staging& staging) {
  // The copies still queued read the buffer: wait for them before it goes.
  for (cudaEvent_t event : staging.events) {
    report_if_failed(cudaEventSynchronize(event), "a staged upload");
    report_if_failed(cudaEventDestroy(event), "a staging event");
  }
  for (cudaEvent_t event : staging.spare) report_if_failed(cudaEventDestroy(event), "a staging event");
  if (staging.buffer) report_if_failed(cudaFreeHost(staging.buffer), "the page-locked staging buffer");
}

DeviceResource<Staging> staging_resource(create_staging, destroy_staging);

// Frees the oldest span; waits for its copy only when `wait` (the ring is full).
bool release_oldest(Staging& staging, bool wait) {
  cudaEvent_t oldest = staging.events.front();
  if (wait) {
    MCDL_CUDA_CHECK(cudaEventSynchronize(oldest));
  } else {
    const cudaError_t state = cudaEventQuery(oldest);
    if (state == cudaErrorNotReady) return false;
    MCDL_CUDA_CHECK(state);
  }
  staging.events.pop_front();
  staging.spare.push_back(oldest);
  staging.spans.release_oldest();
  return true;
}

}  // namespace

void copy_host_parts_to_device(void* device_dst, const std::vector<HostPart>& parts) {
  size_t bytes = 0;
  for (const HostPart& part : parts) bytes += part.bytes;
  if (bytes == 0) return;
  refuse_upload_in_capture();
  char* const dst = static_cast<char*>(device_dst);
  if (bytes > largest_staged) {
    for (size_t offset = 0; const HostPart& part : parts) {
      if (part.bytes)
        MCDL_CUDA_CHECK(cudaMemcpyAsync(dst + offset, part.data, part.bytes, cudaMemcpyHostToDevice, engine_stream()));
      offset += part.bytes;
    }
    // The host buffers may be freed or reused as soon as we return (pageable memory).
    MCDL_CUDA_CHECK(cudaStreamSynchronize(engine_stream()));
    return;
  }
  Staging& staging = staging_resource.get();
  std::lock_guard<std::mutex> lock(staging.mutex);
  bool freed = true;  // the spans whose copies have run, without waiting for the others
  while (freed && !staging.events.empty()) freed = release_oldest(staging, false);
  const size_t span = (bytes + span_alignment - 1) / span_alignment * span_alignment;
  std::optional<size_t> at;
  while (!(at = staging.spans.take(span))) release_oldest(staging, true);
  char* const staged = staging.buffer + *at;
  for (size_t offset = 0; const HostPart& part : parts) {
    if (part.bytes) std::memcpy(staged + offset, part.data, part.bytes);
    offset += part.bytes;
  }
  MCDL_CUDA_CHECK(cudaMemcpyAsync(dst, staged, bytes, cudaMemcpyHostToDevice, engine_stream()));
  cudaEvent_t done = nullptr;
  if (staging.spare.empty()) {
    MCDL_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  } else {
    done = staging.spare.back();
    staging.spare.pop_back();
  }
  staging.events.push_back(done);
  MCDL_CUDA_CHECK(cudaEventRecord(done, engine_stream()));
}

void copy_host_to_device(void* device_dst, const void* host_src, size_t bytes) {
  copy_host_parts_to_device(device_dst, {{host_src, bytes}});
}

}  // namespace mcdl::cuda
