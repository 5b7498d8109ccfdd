// Writes a run's checkpoints while training goes on. At each save the state is copied to the host
// at once (the next step changes the live tensors, and the banks hand out their own buffers);
// a thread then writes the file through RunDirectory::save_checkpoint (temporary file, fsync,
// rename) while the next epoch runs. A CUB-sized checkpoint is 214 MB, a fraction of a second to
// seconds of disk time per epoch (a network file system: more), which an epoch of a few seconds on
// a GPU would otherwise wait for.
//
// At most one write is in flight: a save waits for the one before, and an error of a write (a full
// disk) is raised by the next save or wait, with RunDirectory's message naming the intact last
// checkpoint. Until a write is done, the checkpoint before it is the one --resume finds: a crash
// in that window loses one epoch more than a synchronous write would have.
#pragma once
#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <thread>

#include "engine/tensor.h"
#include "mcdl/run/run_directory.h"

namespace mcdl {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(const RunDirectory& run) : run_(run) {}
  // Waits for the write in flight; an error it had is printed (a destructor cannot raise it).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Waits for the previous write (raising its error), copies `tensors` to the host and starts
  // writing them with `metadata`, as RunDirectory::save_checkpoint(…, epoch, keep_every) does.
  void save(const std::map<std::string, Tensor>& tensors, const std::map<std::string, std::string>& metadata,
            int64_t epoch, int64_t keep_every);
  // Until the write in flight (if any) is on disk; raises its error.
  void wait();

 private:
  const RunDirectory& run_;
  std::thread writer_;
  std::exception_ptr error_;  // set by the writer thread, read after joining it
};

}  // namespace mcdl
