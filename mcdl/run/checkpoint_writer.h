// Writes a run's checkpoints while training goes on. At each save the state is copied to the host
// at once (the next step changes the live tensors, and the banks hand out their own buffers);
// a thread then writes the file through RunDirectory::save_checkpoint (temporary file, fsync,
// rename) while the next epoch runs. A CUB-sized checkpoint is 214 MB, a fraction of a second to
// seconds of disk time per epoch (a network file system: more), which an epoch of a few seconds on
// a GPU would otherwise wait for.
//
// Across processes rank 0 writes the file. Tensors every rank holds whole (the trained model) are
// copied by rank 0 alone. Tensors whose rows the ranks hold in blocks (the memory banks, 123 GB at
// ImageNet-1K size) are copied by each rank, its own rows only, and streamed to rank 0 in pieces
// as the file is written, on the world's side channel (engine/collective.h) from a thread of each
// rank: rank 0 never holds more than its own block and one piece. A world without a side channel
// gathers those rows whole on rank 0 at the save, on the calling thread, and then writes them in
// the background like the rest.
//
// At most one write is in flight: a save waits for the one before, and an error of a write (a full
// disk) is raised by the next save or wait, with RunDirectory's message naming the intact last
// checkpoint. Until a write is done, the checkpoint before it is the one --resume finds: a crash
// in that window loses one epoch more than a synchronous write would have.
#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <thread>

#include "engine/all_gather.h"  // RowBlocks
#include "engine/collective.h"
#include "engine/tensor.h"
#include "mcdl/run/run_directory.h"

namespace mcdl {

class CheckpointWriter {
 public:
  // `world`: the processes of the run; rank 0 is the one whose `run` writes. Rows travel to it in
  // pieces of at most piece_bytes (at least a row).
  CheckpointWriter(const RunDirectory& run, Collective& world, size_t piece_bytes = size_t(1) << 28)
      : run_(run), world_(world), piece_bytes_(piece_bytes) {}
  // Waits for the write in flight; an error it had is printed (a destructor cannot raise it).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Waits for the previous write (raising its error), copies the state to the host and starts
  // writing `tensors` and `row_blocks` (one file of both, names disjoint) with `metadata`, as
  // RunDirectory::save_checkpoint(…, epoch, keep_every) does. Every rank calls it, with the same
  // names and shapes.
  void save(const std::map<std::string, Tensor>& tensors, const std::map<std::string, RowBlocks>& row_blocks,
            const std::map<std::string, std::string>& metadata, int64_t epoch, int64_t keep_every);
  // Until the write in flight (if any) is on disk, or this rank's part of it sent; raises its error.
  void wait();

 private:
  const RunDirectory& run_;
  Collective& world_;
  size_t piece_bytes_;
  std::thread writer_;
  std::exception_ptr error_;  // set by the writer thread, read after joining it
};

}  // namespace mcdl
