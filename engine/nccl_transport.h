// NCCL as the device transport of a world of several processes (engine/collective.h): each
// process's GPU joins one NCCL communicator, whose id rank 0 makes and the world's host
// collectives (MPI) carry to the others. Nothing loads NCCL unless this is called.
#pragma once
#include <memory>
#include <string>

#include "engine/collective.h"
#include "kernels/cuda/nccl.h"

namespace mcdl {

// A device transport over a communicator that others may share (the NCCL world's own).
std::unique_ptr<DeviceTransport> nccl_transport_over(std::shared_ptr<cuda::NcclCommunicator> communicator,
                                                     std::string name);

// Every rank must call it. When NCCL loads on every rank: the transport (its communicator joined).
// Otherwise null on every rank, with `why` saying which rank failed and why (every rank gets the
// same text), so that all of them fall back, or all of them stop, together.
std::unique_ptr<DeviceTransport> make_nccl_transport(Collective& world, std::string& why);

}  // namespace mcdl
