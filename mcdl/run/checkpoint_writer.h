// Writes a run's checkpoints while training goes on. At each save the state is copied to the host
// at once (the next step changes the live tensors, and the banks hand out their own buffers);
// a thread then writes the file through RunDirectory::save_checkpoint (temporary file, fsync,
// rename) while the next epoch runs. A CUB-sized checkpoint is 214 MB, a fraction of a second to
// seconds of disk time per epoch (a network file system: more), which an epoch of a few seconds on
// a GPU would otherwise wait for.
//
// Across processes rank 0 writes the file. Tensors every rank holds whole (the trained model) are
// copied by rank 0 alone. Tensors whose rows the ranks hold in blocks (the memory banks, 123 GB at
// ImageNet-1K size) are copied by each rank, its own rows only, and sent to rank 0 in pieces as
// the file is written, so rank 0 holds its own block and a few pieces, never the whole:
// - on the world's side channel (engine/collective.h), from a thread of each rank, while the
//   training's collectives go on on the world;
// - in a world without one (NCCL's, an MPI without full thread support), on the world itself, a
//   piece per training step (send_piece, called by every rank between steps), the rest at the next
//   wait. Rank 0's writer thread takes the pieces from a short queue; while it is full (the disk
//   slower than the steps), the steps send none.
//
// At most one write is in flight: a save waits for the one before, and an error of a write (a full
// disk) is raised by the next save or wait, with RunDirectory's message naming the intact last
// checkpoint. Until a write is done, the checkpoint before it is the one --resume finds: a crash
// in that window loses one epoch more than a synchronous write would have. So does a run that
// stops on an error while pieces are still to be sent between steps (the writer is destroyed
// without its wait): no rank can tell then whether the others still take part.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "engine/all_gather.h"  // RowBlocks, BlockGather
#include "engine/collective.h"
#include "engine/tensor.h"
#include "mcdl/run/piece_queue.h"
#include "mcdl/run/run_directory.h"

namespace mcdl {

class CheckpointWriter {
 public:
  // `world`: the processes of the run; rank 0 is the one whose `run` writes. Rows travel to it in
  // pieces of at most piece_bytes (at least a row).
  CheckpointWriter(const RunDirectory& run, Collective& world, size_t piece_bytes = size_t(1) << 28)
      : run_(run), world_(world), piece_bytes_(piece_bytes) {}
  // Waits for the write in flight; an error it had is printed (a destructor cannot raise it). Rows
  // still to send between steps are given up, with a note: the ranks may no longer meet.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Waits for the previous write (raising its error), copies the state to the host and starts
  // writing `tensors` and `row_blocks` (one file of both, names disjoint) with `metadata`, as
  // RunDirectory::save_checkpoint(…, epoch, keep_every) does. Every rank calls it, with the same
  // names and shapes.
  void save(const std::map<std::string, Tensor>& tensors, const std::map<std::string, RowBlocks>& row_blocks,
            const std::map<std::string, std::string>& metadata, int64_t epoch, int64_t keep_every);
  // Sends the next piece of rows still to go between steps, if any and if rank 0's writer has room
  // for it (a broadcast of that, then a gather, on the world), which every rank calls at the same
  // place (after each training step). Nothing otherwise.
  void send_piece();
  // Until the write in flight (if any) is on disk, or this rank's part of it sent; raises its error.
  // Every rank calls it at the same place: it sends the pieces still to go.
  void wait();

 private:
  bool rows_to_send() const;
  void send_next_piece();  // one gather on the world: the next piece of between_steps_

  const RunDirectory& run_;
  Collective& world_;
  size_t piece_bytes_;
  std::deque<BlockGather> between_steps_;  // the rows still to send on the world, in file order
  std::shared_ptr<PieceQueue> pieces_;    // rank 0: those rows on their way to the writer thread
  int64_t epoch_ = 0;                     // the epoch of the write in flight
  std::thread writer_;
  std::exception_ptr error_;  // set by the writer thread, read after joining it
};

}  // namespace mcdl
