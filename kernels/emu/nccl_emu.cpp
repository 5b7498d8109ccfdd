// The emulated NCCL: the functions of kernels/emu/nccl_api.h with NCCL's documented semantics,
// for ranks that are threads of one process (emulated "device" memory is host memory, and the
// emulator's device work is done when the call that queued it returns, so a collective can copy at
// once). Built as libmcdl_nccl_emu.so and loaded by the emulator build's kernels/cuda/nccl.cu
// exactly as the GPU build loads libnccl.so.2, so the loading, the id exchange and the calls are
// tested without a GPU.
//
// What it does, as NCCL does: ncclCommInitRank returns once every rank of the id has joined; a
// collective returns once every rank has made the same call; calls between ncclGroupStart and
// ncclGroupEnd run at ncclGroupEnd, in order. Where NCCL would hang or corrupt memory (ranks that
// disagree on a call), it returns an error instead.
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "kernels/emu/nccl_api.h"

namespace {

enum class OpKind { broadcast, all_gather };

struct Op {
  OpKind kind;
  const void* send;
  void* receive;
  size_t bytes;  // broadcast: the count; all-gather: each rank's count
  int root;      // broadcast only

  bool same_call(const Op& other) const {
    return kind == other.kind && bytes == other.bytes && (kind != OpKind::broadcast || root == other.root);
  }
};

// The ranks of one unique id.
struct Clique {
  explicit Clique(int n) : size(n), joined(static_cast<size_t>(n), false), posted(static_cast<size_t>(n)) {}
  const int size;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> joined;
  int members = 0;  // ranks that joined and have not left
  // The collective under way: each rank posts its call, the last one checks them, every rank
  // copies, and the call returns when every rank has copied (so no send buffer is released early).
  std::vector<Op> posted;
  int arrived = 0, copied = 0;
  unsigned long long generation = 0;
  bool mismatch = false;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Clique>> cliques;
};
Registry& registry() {
  static Registry* const instance = new Registry();  // never destroyed: ranks may outlive statics
  return *instance;
}

}  // namespace

struct ncclComm {
  std::shared_ptr<Clique> clique;
  std::string key;
  int rank = 0;
  std::string last_error;
};

namespace {

thread_local int group_depth = 0;
thread_local std::vector<std::pair<ncclComm_t, Op>> grouped;

ncclResult_t fail(ncclComm_t comm, ncclResult_t result, const std::string& why) {
  if (comm) comm->last_error = why;
  return result;
}

void copy_for_rank(const Clique& clique, int rank) {
  const Op& mine = clique.posted[static_cast<size_t>(rank)];
  if (mine.kind == OpKind::broadcast) {
    const Op& root = clique.posted[static_cast<size_t>(mine.root)];
    if (mine.bytes && mine.receive != root.send) std::memmove(mine.receive, root.send, mine.bytes);
    return;
  }
  for (int r = 0; r < clique.size; ++r) {
    char* into = static_cast<char*>(mine.receive) + static_cast<size_t>(r) * mine.bytes;
    const void* from = clique.posted[static_cast<size_t>(r)].send;
    if (mine.bytes && into != from) std::memmove(into, from, mine.bytes);
  }
}

ncclResult_t run(ncclComm_t comm, const Op& op) {
  Clique& clique = *comm->clique;
  std::unique_lock lock(clique.mutex);
  const unsigned long long generation = clique.generation;
  clique.posted[static_cast<size_t>(comm->rank)] = op;
  if (++clique.arrived == clique.size) {
    clique.mismatch = !std::all_of(clique.posted.begin(), clique.posted.end(),
                                   [&](const Op& other) { return other.same_call(clique.posted[0]); });
    clique.changed.notify_all();
  }
  clique.changed.wait(lock, [&] { return clique.arrived == clique.size || clique.generation != generation; });
  const bool mismatch = clique.mismatch;
  if (!mismatch) copy_for_rank(clique, comm->rank);
  if (++clique.copied == clique.size) {
    clique.arrived = clique.copied = 0;
    ++clique.generation;
    clique.changed.notify_all();
  }
  clique.changed.wait(lock, [&] { return clique.generation != generation; });
  if (mismatch)
    return fail(comm, ncclInvalidUsage, "the ranks made different calls (kind, count or root) at the same point");
  return ncclSuccess;
}

ncclResult_t submit(ncclComm_t comm, const Op& op) {
  if (group_depth > 0) {
    grouped.emplace_back(comm, op);
    return ncclSuccess;
  }
  return run(comm, op);
}

ncclResult_t check_buffers(ncclComm_t comm, ncclDataType_t datatype) {
  if (!comm) return ncclInvalidArgument;
  if (datatype != ncclInt8 && datatype != ncclUint8)
    return fail(comm, ncclInvalidArgument, "the emulated NCCL moves bytes only (ncclInt8, ncclUint8)");
  return ncclSuccess;
}

}  // namespace

extern "C" {

int mcdl_nccl_emulated() { return 1; }

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = 22809;  // the interface it follows: NCCL 2.28.9's
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  if (!unique_id) return ncclInvalidArgument;
  std::memset(unique_id->internal, 0, sizeof unique_id->internal);
  // As NCCL documents: with NCCL_COMM_ID set, every rank that asks gets the id of that address.
  if (const char* address = std::getenv("NCCL_COMM_ID"); address && *address) {
    std::strncpy(unique_id->internal, address, sizeof unique_id->internal - 1);
    return ncclSuccess;
  }
  static std::mutex mutex;
  static std::random_device device;
  static unsigned long long counter = 0;
  const std::lock_guard lock(mutex);
  const std::string id = "emulated-" + std::to_string(device()) + "-" + std::to_string(++counter);
  std::strncpy(unique_id->internal, id.c_str(), sizeof unique_id->internal - 1);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank) {
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  const std::string key(comm_id.internal, strnlen(comm_id.internal, sizeof comm_id.internal));
  std::shared_ptr<Clique> clique;
  {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    auto& entry = r.cliques[key];
    if (!entry) entry = std::make_shared<Clique>(nranks);
    clique = entry;
  }
  std::unique_lock lock(clique->mutex);
  if (clique->size != nranks || clique->joined[static_cast<size_t>(rank)]) return ncclInvalidUsage;
  clique->joined[static_cast<size_t>(rank)] = true;
  ++clique->members;
  clique->changed.notify_all();
  clique->changed.wait(lock, [&] {  // joined flags stay set, so a rank that already left still counts
    return std::all_of(clique->joined.begin(), clique->joined.end(), [](bool j) { return j; });
  });
  *comm = new ncclComm{clique, key, rank, ""};
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  bool last = false;
  {
    const std::lock_guard lock(comm->clique->mutex);
    last = --comm->clique->members == 0;
  }
  if (last) {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    const auto found = r.cliques.find(comm->key);
    if (found != r.cliques.end() && found->second == comm->clique) r.cliques.erase(found);
  }
  delete comm;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) { return comm ? comm->last_error.c_str() : ""; }

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t) {
  if (const ncclResult_t status = check_buffers(comm, datatype); status != ncclSuccess) return status;
  if (root < 0 || root >= comm->clique->size) return fail(comm, ncclInvalidArgument, "no such root rank");
  return submit(comm, {OpKind::broadcast, sendbuff, recvbuff, count, root});
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t) {
  if (const ncclResult_t status = check_buffers(comm, datatype); status != ncclSuccess) return status;
  return submit(comm, {OpKind::all_gather, sendbuff, recvbuff, sendcount, 0});
}

ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth > 0) return ncclSuccess;
  std::vector<std::pair<ncclComm_t, Op>> calls;
  calls.swap(grouped);
  for (const auto& [comm, op] : calls)
    if (const ncclResult_t status = run(comm, op); status != ncclSuccess) return status;
  return ncclSuccess;
}

}  // extern "C"
