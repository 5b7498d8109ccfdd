// mcdl_train --nproc N: one machine's data-parallel run without typing mpirun. The tool starts
// OpenMPI's mpirun with N copies of itself (the same arguments without --nproc), adding what a
// plain mpirun would refuse: --allow-run-as-root for root, --oversubscribe for more processes
// than cores, and OMP_NUM_THREADS = cores / N unless set.
#pragma once
#include <string>
#include <vector>

namespace mcdl::tools {

// The arguments without "--nproc N"; when N > 1 and no MPI launcher started this process, runs
// mpirun in its place (returns only with an error). Under a launcher, N must be its process count.
std::vector<std::string> start_processes_if_asked(int argc, char** argv);

// Several processes of a run on one machine with several GPUs: each takes the GPU of its local
// rank (CUDA_VISIBLE_DEVICES set before CUDA starts), unless CUDA_VISIBLE_DEVICES is already set
// or the machine has fewer GPUs than local processes (then they share, as without this). Returns
// the GPU chosen, or -1 for none.
int assign_gpu_to_local_rank();
// The rule alone: the local rank and size a launcher gave (-1 and 0: none) and the GPU count.
int gpu_for_local_rank(int local_rank, int local_size, int gpus);

}  // namespace mcdl::tools
