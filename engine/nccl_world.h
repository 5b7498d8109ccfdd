// The processes of a run started without MPI, by a launcher that only sets RANK and WORLD_SIZE
// (torchrun --no-python, or a job script): every collective goes through NCCL, host data staged
// through the GPU. NCCL bootstraps from NCCL_COMM_ID (host:port of rank 0's machine, the same on
// every process), as NCCL documents, so no rank has to send the others an id first.
#pragma once
#include <memory>

#include "engine/collective.h"

namespace mcdl {

// Rank `rank` of `size`, its communicator joined (returns when every rank has). Throws, saying
// what to do, without NCCL_COMM_ID, without a GPU, or when NCCL cannot be loaded. The world is its
// own device transport.
std::unique_ptr<Collective> nccl_world(int rank, int size);

}  // namespace mcdl
