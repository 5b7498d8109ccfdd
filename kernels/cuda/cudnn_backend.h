// What the engine's cuDNN users share (.cu files only): the loaded library's functions, the handle
// on the engine stream, and owned backend descriptors. cuDNN's backend API builds an operation
// graph out of descriptors (tensors, operations), asks the heuristics for engine configurations,
// and runs an execution plan on a variant pack of device pointers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#ifdef __CUDACC__
#include <cudnn_graph.h>
#else
#include "kernels/emu/cudnn_api.h"
#endif

namespace mcdl::cuda {

// The functions the engine calls, resolved from the loaded file.
struct CudnnLibrary {
  std::string path;
  bool emulated = false;
  size_t version = 0;  // major·10000 + minor·100 + patch
  decltype(&cudnnGetVersion) get_version = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnGetLastErrorString) last_error = nullptr;
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnDestroy) destroy = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnBackendCreateDescriptor) create_descriptor = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) destroy_descriptor = nullptr;
  decltype(&cudnnBackendFinalize) finalize = nullptr;
  decltype(&cudnnBackendSetAttribute) set_attribute = nullptr;
  decltype(&cudnnBackendGetAttribute) get_attribute = nullptr;
  decltype(&cudnnBackendExecute) execute = nullptr;
};

// The file named now, loaded on its first use (a failed load throws, and the next call tries
// again).
const CudnnLibrary& cudnn_library();

// Throws std::runtime_error "cuDNN <call> failed: <status> (<cuDNN's last message>)" unless
// status is CUDNN_STATUS_SUCCESS.
void check_cudnn(cudnnStatus_t status, const char* call);

// The handle on the engine's device, its work queued on the engine stream; created on first use,
// released by release_device().
cudnnHandle_t cudnn_handle();

// One backend descriptor of the library loaded when it was made, destroyed with the object.
class BackendDescriptor {
 public:
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);
  ~BackendDescriptor();
  BackendDescriptor(BackendDescriptor&& other) noexcept : library_(other.library_), descriptor_(other.descriptor_) {
    other.descriptor_ = nullptr;
  }
  BackendDescriptor& operator=(BackendDescriptor&&) = delete;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return descriptor_; }
  // cudnnBackendSetAttribute with `count` elements; throws on failure.
  BackendDescriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                         const void* elements);
  BackendDescriptor& set_int64(cudnnBackendAttributeName_t name, int64_t value);
  BackendDescriptor& set_int64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values);
  BackendDescriptor& set_bool(cudnnBackendAttributeName_t name, bool value);
  BackendDescriptor& set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value);
  BackendDescriptor& set_descriptor(cudnnBackendAttributeName_t name, const BackendDescriptor& value);
  BackendDescriptor& set_handle(cudnnBackendAttributeName_t name, cudnnHandle_t handle);
  // Throws on failure.
  void finalize();
  // cudnnBackendFinalize's status, for callers that try several configurations.
  cudnnStatus_t try_finalize();

 private:
  const CudnnLibrary* library_;
  cudnnBackendDescriptor_t descriptor_ = nullptr;
};

}  // namespace mcdl::cuda
