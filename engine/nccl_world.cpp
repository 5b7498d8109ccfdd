#include "engine/nccl_world.h"

#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "engine/error.h"
#include "engine/nccl_transport.h"
#include "kernels/cuda/nccl.h"
#include "kernels/cuda/runtime.h"

namespace mcdl {
namespace {

// A device buffer for one collective's staging.
class DeviceBytes {
 public:
  explicit DeviceBytes(size_t bytes) : data_(cuda::device_alloc(bytes > 0 ? bytes : 1)) {}
  ~DeviceBytes() { cuda::device_free(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* data() const { return data_; }

 private:
  void* data_;
};

size_t total_of(const std::vector<size_t>& counts) { return std::accumulate(counts.begin(), counts.end(), size_t{0}); }

class NcclWorld final : public Collective {
 public:
  NcclWorld(int rank, int size) : rank_(rank), size_(size) {
    const char* address = std::getenv("NCCL_COMM_ID");
    check(address && *address, "a launcher started ", size, " processes without MPI (RANK and WORLD_SIZE are set): ",
          "they talk through NCCL, which needs NCCL_COMM_ID=<host of rank 0>:<free port>, the same on every process ",
          "(e.g. NCCL_COMM_ID=$MASTER_ADDR:29600 under torchrun); or start them with mpirun");
    check(cuda::device_available(), "a launcher started ", size, " processes without MPI, and NCCL, which carries ",
          "their data then, needs a GPU per process; on CPUs start them with mpirun");
    const std::string name = cuda::nccl_description();
    communicator_ = std::make_shared<cuda::NcclCommunicator>(cuda::nccl_unique_id(), rank, size);
    set_device_transport(nccl_transport_over(communicator_, name));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string transport() const override { return "NCCL"; }

  void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) override {
    const DeviceBytes out(total_of(counts));
    gather_on_device(send, send_bytes, out, counts);
    cuda::copy_device_to_host(receive, out.data(), total_of(counts));
  }
  void gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts,
              int root) override {
    const DeviceBytes out(total_of(counts));
    gather_on_device(send, send_bytes, out, counts);  // NCCL has no gather-v: every rank receives, root keeps
    if (rank_ == root) cuda::copy_device_to_host(receive, out.data(), total_of(counts));
  }
  void broadcast(void* data, size_t bytes, int root) override {
    const DeviceBytes staged(bytes);
    if (rank_ == root) cuda::copy_host_to_device(staged.data(), data, bytes);
    communicator_->broadcast(staged.data(), bytes, root);
    if (rank_ != root) cuda::copy_device_to_host(data, staged.data(), bytes);
  }
  void barrier() override {
    const char mine = 1;
    std::vector<char> all(static_cast<size_t>(size_));
    all_gather(&mine, 1, all.data(), std::vector<size_t>(all.size(), 1));
  }
  [[noreturn]] void abort(int code) override {
    // No collective abort without MPI: the launcher (torchrun) ends the other ranks when one exits.
    std::fflush(stderr);
    std::_Exit(code);
  }

 private:
  void gather_on_device(const void* send, size_t send_bytes, const DeviceBytes& out, const std::vector<size_t>& counts) {
    check(counts.size() == static_cast<size_t>(size_) && counts[static_cast<size_t>(rank_)] == send_bytes,
          "all_gather on rank ", rank_, ": the counts do not match the ", size_, " processes");
    const DeviceBytes in(send_bytes);
    if (send_bytes > 0) cuda::copy_host_to_device(in.data(), send, send_bytes);
    communicator_->all_gather(in.data(), send_bytes, out.data(), counts);
  }

  int rank_, size_;
  std::shared_ptr<cuda::NcclCommunicator> communicator_;
};

}  // namespace

std::unique_ptr<Collective> nccl_world(int rank, int size) { return std::make_unique<NcclWorld>(rank, size); }

}  // namespace mcdl
