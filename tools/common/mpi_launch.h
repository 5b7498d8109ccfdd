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

}  // namespace mcdl::tools
