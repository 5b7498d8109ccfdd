// The processes of a data-parallel run and what they exchange on the host: all-gather,
// broadcast and barrier (the ordered reduction is built on all-gather in engine/shards.cpp, so
// its summation order never depends on the transport). One process is the default and needs
// nothing; a process started by an MPI launcher (mpirun, srun) with more than one rank loads the
// MPI plugin, libmcdl_mpi.so, at run time (engine/mpi_plugin_api.h).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mcdl {

// Collectives on device buffers between the same ranks (NCCL: engine/nccl_transport.h), queued on
// the engine's stream. A world may have one; without it, device data goes through host memory.
class DeviceTransport {
 public:
  virtual ~DeviceTransport() = default;
  virtual std::string name() const = 0;  // e.g. "NCCL 2.28.9 (libnccl.so.2)"
  // As Collective::all_gather and broadcast, on device pointers.
  virtual void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string transport() const = 0;  // "one process" or "MPI"

  // receive = every rank's `send` in rank order; counts[r] bytes come from rank r (counts[rank()]
  // must be send_bytes, and `receive` holds their sum).
  virtual void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) = 0;
  // The same into `receive` on rank `root` only (the others pass null): what one writer needs.
  virtual void gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts,
                      int root) = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Ends every process of the run with exit status `code` (after this one printed why).
  [[noreturn]] virtual void abort(int code) = 0;
  // A second world of the same ranks, whose calls may run on another thread while this one's run
  // (a checkpoint's rows sent to rank 0 in the background while the next epoch trains), or null
  // where the transport has none (one process, NCCL, an MPI without full thread support or with
  // MCDL_MPI_SIDE_CHANNEL=off).
  virtual Collective* side_channel() { return nullptr; }

  // The device transport between these ranks, or null (device data then travels through host
  // memory and the calls above).
  DeviceTransport* device_transport() const { return device_transport_.get(); }
  void set_device_transport(std::unique_ptr<DeviceTransport> transport) { device_transport_ = std::move(transport); }

 private:
  std::unique_ptr<DeviceTransport> device_transport_;
};

// The number of processes a launcher started (its environment): an MPI launcher's, else that of
// one that sets only RANK and WORLD_SIZE (torchrun); 1 when none did.
int launcher_world_size();

// This process's world, made on the first call: MPI under an MPI launcher of several processes
// (throws, with what to do, when the plugin cannot be loaded or MPI cannot start); NCCL alone under
// a launcher that sets only RANK and WORLD_SIZE (engine/nccl_world.h); else one process.
Collective& world();

// The world when world() made one of several processes, else null (what an error handler asks
// before it ends every rank).
Collective* multi_process_world();

// The one-process world (what world() is without a launcher).
std::unique_ptr<Collective> single_process();

// A value every rank must agree on (a configuration, the program's identity): rank 0's bytes are
// broadcast and each rank compares its own; a rank that differs throws naming `what`.
void check_same_on_every_rank(Collective& world, const std::string& bytes, const std::string& what);

}  // namespace mcdl
