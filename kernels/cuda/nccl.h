// Collectives on device buffers through NCCL. The library is loaded at run time (dlopen) on first
// use, so neither the build nor a run that never asks for it needs NCCL: only a multi-process GPU
// run does. Plain C++ (no CUDA or NCCL headers), so engine code can include it.
//
// Which file is loaded: $MCDL_NCCL_LIBRARY, else NCCL's libnccl.so.2 from the loader's path (the
// CUDA toolkit's lib64 is on the programs' run path). In the emulator build (no nvcc, and the test
// binary) the default is the emulated NCCL, libmcdl_nccl_emu.so next to the executable, whose
// ranks are threads of one process (kernels/emu/nccl_emu.cpp).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace mcdl::cuda {

// "NCCL 2.28.9 (<file>)", loading the library if needed; throws, naming the file, the loader's
// reason and what to do, when it cannot be loaded or lacks a function the engine calls.
std::string nccl_description();

// The id that names one communicator: made by one rank and sent to the others (through MPI), or
// made by every rank alike when NCCL_COMM_ID is set (NCCL's bootstrap without MPI).
struct NcclId {
  unsigned char bytes[128] = {};
};
NcclId nccl_unique_id();

// One rank's membership of a communicator of `size` ranks, on the engine's device. Every call is a
// collective (every rank makes it, in the same order, with the same counts) queued on the engine
// stream; the buffers are device memory.
class NcclCommunicator {
 public:
  // Returns when every rank has joined.
  NcclCommunicator(const NcclId& id, int rank, int size);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // receive = every rank's send in rank order, counts[r] bytes from rank r (equal counts take
  // NCCL's all-gather, others one broadcast per rank in a group).
  void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts);
  // `bytes` at `data` on rank `root` to `data` on every rank.
  void broadcast(void* data, size_t bytes, int root);

 private:
  const void* library_ = nullptr;  // the loaded NCCL that made comm_
  void* comm_ = nullptr;           // ncclComm_t
  int rank_ = 0, size_ = 1;
};

}  // namespace mcdl::cuda
