// The part of the CUDA runtime API the project calls, for emulator builds: "device" memory is
// host memory, every call completes at once (launches are synchronous too), and the number of
// devices is whatever the program sets (0 by default, so a build without nvcc is a CPU-only
// build; the emulated test binary sets 1).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/emu/vector_types.h"

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorNoDevice = 100 };
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
constexpr unsigned cudaStreamNonBlocking = 1;

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
}  // namespace mcdl::emu

inline const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  }
  return "unknown error";
}
inline const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
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
  prop->totalGlobalMem = size_t(1) << 34;
  return cudaSuccess;
}

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

inline cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t) {
  const size_t rounded = (bytes + 255) / 256 * 256;
  *ptr = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) {
  std::free(ptr);
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
