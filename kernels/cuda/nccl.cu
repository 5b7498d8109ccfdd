#include "kernels/cuda/nccl.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/runtime_library.h"

#ifdef __CUDACC__
#include <nccl.h>
#else
#include "kernels/emu/nccl_api.h"
#endif

namespace mcdl::cuda {
namespace {

// The functions the engine calls, resolved from the loaded file.
struct NcclLibrary {
  std::string path;
  bool emulated = false;
  int version = 0;
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetLastError) last_error = nullptr;  // optional: NCCL before 2.13 lacks it
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
};

template <typename F>
void resolve(void* handle, const std::string& path, const char* name, F& into, bool required = true) {
  into = reinterpret_cast<F>(runtime_library_symbol(handle, name));
  if (!into && required)
    throw std::runtime_error(path + " has no " + name + ": it is not NCCL 2.12 or newer; install a current NCCL or " +
                             "point MCDL_NCCL_LIBRARY at one");
}

NcclLibrary load(const std::string& path) {
  NcclLibrary lib;
  lib.path = path;
  void* handle = open_runtime_library(
      lib.path, "NCCL",
      kEmulatedRuntime ? "the emulated NCCL is built by `make` next to the test binary; MCDL_NCCL_LIBRARY names another file"
                       : "install NCCL (it comes with the CUDA toolkit's NCCL package, or pip's nvidia-nccl-cu13), put it "
                         "on LD_LIBRARY_PATH or name the file in MCDL_NCCL_LIBRARY; or pass --gpu-collectives host");
  resolve(handle, lib.path, "ncclGetVersion", lib.get_version);
  resolve(handle, lib.path, "ncclGetUniqueId", lib.get_unique_id);
  resolve(handle, lib.path, "ncclCommInitRank", lib.comm_init_rank);
  resolve(handle, lib.path, "ncclCommDestroy", lib.comm_destroy);
  resolve(handle, lib.path, "ncclGetErrorString", lib.error_string);
  resolve(handle, lib.path, "ncclGetLastError", lib.last_error, false);
  resolve(handle, lib.path, "ncclBroadcast", lib.broadcast);
  resolve(handle, lib.path, "ncclAllGather", lib.all_gather);
  resolve(handle, lib.path, "ncclGroupStart", lib.group_start);
  resolve(handle, lib.path, "ncclGroupEnd", lib.group_end);
  lib.emulated = runtime_library_symbol(handle, "mcdl_nccl_emulated") != nullptr;
  if (lib.get_version(&lib.version) != ncclSuccess) throw std::runtime_error(lib.path + ": ncclGetVersion failed");
  return lib;  // the handle stays open for the life of the process
}

// The file named now, loaded on its first use (a failed load throws, and the next call tries again).
const NcclLibrary& library() {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const NcclLibrary>> loaded;
  const std::string path = runtime_library_path("MCDL_NCCL_LIBRARY", "libnccl.so.2", "libmcdl_nccl_emu.so");
  const std::lock_guard lock(mutex);
  auto& entry = loaded[path];
  if (!entry) entry = std::make_unique<const NcclLibrary>(load(path));
  return *entry;
}

void check_nccl(const NcclLibrary& lib, ncclResult_t status, const char* call, ncclComm_t comm, int rank) {
  if (status == ncclSuccess) return;
  std::string what = std::string("NCCL ") + call + " failed on rank " + std::to_string(rank) + ": " +
                     lib.error_string(status);
  if (comm && lib.last_error)
    if (const char* detail = lib.last_error(comm); detail && *detail) what += std::string(" (") + detail + ")";
  throw std::runtime_error(what);
}

}  // namespace

std::string nccl_description() {
  const NcclLibrary& lib = library();
  // NCCL's code is major·10000 + minor·100 + patch since 2.9.
  const int v = lib.version;
  return std::string(lib.emulated ? "emulated NCCL " : "NCCL ") + std::to_string(v / 10000) + "." +
         std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) + " (" + lib.path + ")";
}

NcclId nccl_unique_id() {
  ncclUniqueId id;
  const NcclLibrary& lib = library();
  check_nccl(lib, lib.get_unique_id(&id), "ncclGetUniqueId", nullptr, 0);
  NcclId out;
  static_assert(sizeof out.bytes == sizeof id.internal);
  std::memcpy(out.bytes, id.internal, sizeof out.bytes);
  return out;
}

namespace {
const NcclLibrary& library_of(const void* library) { return *static_cast<const NcclLibrary*>(library); }
}  // namespace

NcclCommunicator::NcclCommunicator(const NcclId& id, int rank, int size)
    : library_(&library()), rank_(rank), size_(size) {
  const NcclLibrary& lib = library_of(library_);
  ncclUniqueId nccl_id;
  std::memcpy(nccl_id.internal, id.bytes, sizeof nccl_id.internal);
  (void)engine_stream();  // selects the engine's device before NCCL binds the communicator to it
  ncclComm_t comm = nullptr;
  check_nccl(lib, lib.comm_init_rank(&comm, size, nccl_id, rank), "ncclCommInitRank", nullptr, rank);
  comm_ = comm;
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) (void)library_of(library_).comm_destroy(static_cast<ncclComm_t>(comm_));
}

void NcclCommunicator::all_gather(const void* send, size_t send_bytes, void* receive,
                                  const std::vector<size_t>& counts) {
  if (counts.size() != static_cast<size_t>(size_) || counts[static_cast<size_t>(rank_)] != send_bytes)
    throw std::runtime_error("NCCL all-gather on rank " + std::to_string(rank_) + ": the counts do not match the " +
                             std::to_string(size_) + " ranks");
  const NcclLibrary& lib = library_of(library_);
  const auto comm = static_cast<ncclComm_t>(comm_);
  const cudaStream_t stream = engine_stream();
  bool equal = true;
  for (size_t c : counts) equal = equal && c == send_bytes;
  if (equal) {
    if (send_bytes > 0)
      check_nccl(lib, lib.all_gather(send, receive, send_bytes, ncclUint8, comm, stream), "ncclAllGather", comm, rank_);
    return;
  }
  // Uneven blocks: each rank broadcasts its own into its place, all in one group.
  check_nccl(lib, lib.group_start(), "ncclGroupStart", comm, rank_);
  size_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    const size_t bytes = counts[static_cast<size_t>(r)];
    char* place = static_cast<char*>(receive) + offset;
    if (bytes > 0) {
      const ncclResult_t status = lib.broadcast(r == rank_ ? send : place, place, bytes, ncclUint8, r, comm, stream);
      if (status != ncclSuccess) {
        (void)lib.group_end();
        check_nccl(lib, status, "ncclBroadcast", comm, rank_);
      }
    }
    offset += bytes;
  }
  check_nccl(lib, lib.group_end(), "ncclGroupEnd", comm, rank_);
}

void NcclCommunicator::broadcast(void* data, size_t bytes, int root) {
  if (bytes == 0) return;
  const NcclLibrary& lib = library_of(library_);
  const auto comm = static_cast<ncclComm_t>(comm_);
  check_nccl(lib, lib.broadcast(data, data, bytes, ncclUint8, root, comm, engine_stream()), "ncclBroadcast", comm, rank_);
}

}  // namespace mcdl::cuda
