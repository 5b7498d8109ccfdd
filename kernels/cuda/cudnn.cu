#include "kernels/cuda/cudnn.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/cudnn_backend.h"
#include "kernels/cuda/device_resource.h"
#include "kernels/cuda/runtime_library.h"

namespace mcdl::cuda {
namespace {

template <typename F>
void resolve(void* handle, const std::string& path, const char* name, F& into) {
  into = reinterpret_cast<F>(runtime_library_symbol(handle, name));
  if (!into)
    throw std::runtime_error(path + " has no " + name + ": it is not cuDNN 9; install cuDNN 9 or point " +
                             "MCDL_CUDNN_LIBRARY at it");
}

CudnnLibrary load(const std::string& path) {
  CudnnLibrary lib;
  lib.path = path;
  void* handle = open_runtime_library(
      path, "cuDNN",
      kEmulatedRuntime ? "the emulated cuDNN is built by `make` next to the test binary; MCDL_CUDNN_LIBRARY names "
                         "another file"
                       : "install cuDNN 9 (NVIDIA's cudnn9-cuda-13 package, or pip's nvidia-cudnn-cu13), put it on "
                         "LD_LIBRARY_PATH or name the file in MCDL_CUDNN_LIBRARY");
  resolve(handle, path, "cudnnGetVersion", lib.get_version);
  resolve(handle, path, "cudnnGetErrorString", lib.error_string);
  resolve(handle, path, "cudnnGetLastErrorString", lib.last_error);
  resolve(handle, path, "cudnnCreate", lib.create);
  resolve(handle, path, "cudnnDestroy", lib.destroy);
  resolve(handle, path, "cudnnSetStream", lib.set_stream);
  resolve(handle, path, "cudnnBackendCreateDescriptor", lib.create_descriptor);
  resolve(handle, path, "cudnnBackendDestroyDescriptor", lib.destroy_descriptor);
  resolve(handle, path, "cudnnBackendFinalize", lib.finalize);
  resolve(handle, path, "cudnnBackendSetAttribute", lib.set_attribute);
  resolve(handle, path, "cudnnBackendGetAttribute", lib.get_attribute);
  resolve(handle, path, "cudnnBackendExecute", lib.execute);
  lib.emulated = runtime_library_symbol(handle, "mcdl_cudnn_emulated") != nullptr;
#ifndef __CUDACC__
  // The emulated cuDNN queues its executions through this program's emulated streams, so that a
  // capture (CUDA graph) records them as it records kernels.
  using StreamQueue = bool (*)(cudaStream_t, std::function<void()>);
  if (auto set_queue = reinterpret_cast<void (*)(StreamQueue)>(
          runtime_library_symbol(handle, "mcdl_cudnn_emu_set_stream_queue")))
    set_queue([](cudaStream_t stream, std::function<void()> work) {
      if (!emu::stream_usable(stream)) return false;
      emu::on_stream(stream, std::move(work));
      return true;
    });
#endif
  lib.version = lib.get_version();
  if (lib.version < 90000)
    throw std::runtime_error(path + " is cuDNN " + std::to_string(lib.version) +
                             "; the engine's graphs need cuDNN 9 or newer (MCDL_CUDNN_LIBRARY names another file)");
  return lib;  // the handle stays open for the life of the process
}

// The handle and the library that made it (released through that one, whatever
// MCDL_CUDNN_LIBRARY names by then).
struct OwnedHandle {
  const CudnnLibrary* library = nullptr;
  cudnnHandle_t handle = nullptr;
};

void create_handle(OwnedHandle& owned) {
  const cudaStream_t stream = engine_stream();
  owned.library = &cudnn_library();
  check_cudnn(owned.library->create(&owned.handle), "cudnnCreate");
  check_cudnn(owned.library->set_stream(owned.handle, stream), "cudnnSetStream");
}
void destroy_handle(OwnedHandle& owned) {
  if (!owned.handle) return;
  if (const cudnnStatus_t status = owned.library->destroy(owned.handle); status != CUDNN_STATUS_SUCCESS)
    report_release_failure("the cuDNN handle", owned.library->error_string(status));
}
DeviceResource<OwnedHandle> handle_resource(create_handle, destroy_handle);

}  // namespace

const CudnnLibrary& cudnn_library() {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const CudnnLibrary>> loaded;
  const std::string path = runtime_library_path("MCDL_CUDNN_LIBRARY", "libcudnn.so.9", "libmcdl_cudnn_emu.so");
  const std::lock_guard lock(mutex);
  auto& entry = loaded[path];
  if (!entry) entry = std::make_unique<const CudnnLibrary>(load(path));
  return *entry;
}

void check_cudnn(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const CudnnLibrary& lib = cudnn_library();
  std::string what = std::string("cuDNN ") + call + " failed: " + lib.error_string(status);
  char detail[512] = {};
  lib.last_error(detail, sizeof detail);
  if (detail[0]) what += std::string(" (") + detail + ")";
  throw std::runtime_error(what);
}

std::string cudnn_description() {
  const CudnnLibrary& lib = cudnn_library();
  const size_t v = lib.version;
  return std::string(lib.emulated ? "emulated cuDNN " : "cuDNN ") + std::to_string(v / 10000) + "." +
         std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) + " (" + lib.path + ")";
}

cudnnHandle_t cudnn_handle() { return handle_resource.get().handle; }

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type) : library_(&cudnn_library()) {
  check_cudnn(library_->create_descriptor(type, &descriptor_), "cudnnBackendCreateDescriptor");
}

BackendDescriptor::~BackendDescriptor() {
  if (descriptor_) (void)library_->destroy_descriptor(descriptor_);
}

BackendDescriptor& BackendDescriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                          int64_t count, const void* elements) {
  check_cudnn(library_->set_attribute(descriptor_, name, type, count, elements), "cudnnBackendSetAttribute");
  return *this;
}
BackendDescriptor& BackendDescriptor::set_int64(cudnnBackendAttributeName_t name, int64_t value) {
  return set(name, CUDNN_TYPE_INT64, 1, &value);
}
BackendDescriptor& BackendDescriptor::set_int64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
  return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
}
BackendDescriptor& BackendDescriptor::set_bool(cudnnBackendAttributeName_t name, bool value) {
  return set(name, CUDNN_TYPE_BOOLEAN, 1, &value);
}
BackendDescriptor& BackendDescriptor::set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value) {
  return set(name, CUDNN_TYPE_DATA_TYPE, 1, &value);
}
BackendDescriptor& BackendDescriptor::set_descriptor(cudnnBackendAttributeName_t name, const BackendDescriptor& value) {
  const cudnnBackendDescriptor_t raw = value.get();
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}
BackendDescriptor& BackendDescriptor::set_handle(cudnnBackendAttributeName_t name, cudnnHandle_t handle) {
  return set(name, CUDNN_TYPE_HANDLE, 1, &handle);
}
void BackendDescriptor::finalize() { check_cudnn(try_finalize(), "cudnnBackendFinalize"); }
cudnnStatus_t BackendDescriptor::try_finalize() { return library_->finalize(descriptor_); }

}  // namespace mcdl::cuda
