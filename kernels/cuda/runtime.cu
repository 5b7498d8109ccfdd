#include "kernels/cuda/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/cuda/cuda_common.h"

#ifdef __CUDACC__
#include <nvtx3/nvToolsExt.h>  // header-only: nothing to link
#else
#include "kernels/emu/profile_ranges.h"
#endif

namespace mcdl::cuda {
namespace {

struct DeviceState {
  bool available = false;
  cudaStream_t stream = nullptr;
};

DeviceState init_device() {
  DeviceState state;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
    (void)cudaGetLastError();  // clear the sticky error of a missing driver
    return state;
  }
  MCDL_CUDA_CHECK(cudaSetDevice(0));
  MCDL_CUDA_CHECK(cudaStreamCreateWithFlags(&state.stream, cudaStreamNonBlocking));
#ifdef __CUDACC__
  // Keep freed memory in the pool: a training step frees and reallocates the same sizes.
  cudaMemPool_t pool;
  MCDL_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t threshold = UINT64_MAX;
  MCDL_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
#endif
  state.available = true;
  return state;
}

const DeviceState& device_state() {
  static const DeviceState state = init_device();
  return state;
}

void require_device(const char* what) {
  if (!device_state().available)
    throw std::runtime_error(std::string(what) + ": no usable CUDA device (cudaGetDeviceCount found none)");
}

}  // namespace

cudaStream_t engine_stream() { return device_state().stream; }

bool device_available() { return device_state().available; }

std::string device_description() {
  if (!device_available()) return "no CUDA device";
  cudaDeviceProp prop;
  MCDL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  char line[400];
  std::snprintf(line, sizeof line, "%s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1u << 30));
  return line;
}

void* device_alloc(size_t bytes) {
  require_device("device_alloc");
  void* pointer = nullptr;
  MCDL_CUDA_CHECK(cudaMallocAsync(&pointer, bytes == 0 ? 1 : bytes, engine_stream()));
  return pointer;
}

void device_free(void* pointer) {
  if (pointer) MCDL_CUDA_CHECK(cudaFreeAsync(pointer, engine_stream()));
}

void copy_host_to_device(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  MCDL_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, engine_stream()));
  // The host buffer may be freed or reused as soon as we return (pageable memory).
  MCDL_CUDA_CHECK(cudaStreamSynchronize(engine_stream()));
}

void copy_device_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  MCDL_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, engine_stream()));
  MCDL_CUDA_CHECK(cudaStreamSynchronize(engine_stream()));
}

void copy_device_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes) MCDL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, engine_stream()));
}

void fill_bytes(void* device_dst, int byte_value, size_t bytes) {
  if (bytes) MCDL_CUDA_CHECK(cudaMemsetAsync(device_dst, byte_value, bytes, engine_stream()));
}

double time_on_device_ms(void (*work)(void*), void* context, int repeats) {
  require_device("time_on_device_ms");
  work(context);  // warm-up: first-use costs (handles, pools, module loading)
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
#ifdef __CUDACC__
    cudaEvent_t start, stop;
    MCDL_CUDA_CHECK(cudaEventCreate(&start));
    MCDL_CUDA_CHECK(cudaEventCreate(&stop));
    MCDL_CUDA_CHECK(cudaEventRecord(start, engine_stream()));
    work(context);
    MCDL_CUDA_CHECK(cudaEventRecord(stop, engine_stream()));
    MCDL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    MCDL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    MCDL_CUDA_CHECK(cudaEventDestroy(start));
    MCDL_CUDA_CHECK(cudaEventDestroy(stop));
    times.push_back(ms);
#else  // the emulator runs everything synchronously: wall-clock time
    const auto start = std::chrono::steady_clock::now();
    work(context);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
#endif
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void synchronize() {
  if (device_available()) MCDL_CUDA_CHECK(cudaStreamSynchronize(engine_stream()));
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
