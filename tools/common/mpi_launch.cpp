#include "tools/common/mpi_launch.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <thread>

#include "engine/collective.h"
#include "engine/error.h"

namespace mcdl::tools {

std::vector<std::string> start_processes_if_asked(int argc, char** argv) {
  std::vector<std::string> args;
  int64_t nproc = 1;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strcmp(argv[i], "--nproc") == 0) {
      check(i + 1 < argc, "--nproc needs a process count");
      char* end = nullptr;
      nproc = std::strtoll(argv[++i], &end, 10);
      check(*argv[i] != '\0' && *end == '\0' && nproc >= 1 && nproc <= 4096, "--nproc needs a process count from 1 to ",
            "4096, got '", argv[i], "'");
      continue;
    }
    args.emplace_back(argv[i]);
  }
  const int launched = launcher_world_size();
  if (launched > 1 || nproc == 1) {
    check(launched == 1 || nproc == 1 || nproc == launched, "--nproc ", nproc, " but the launcher started ", launched,
          " processes: leave --nproc out under mpirun or srun");
    return args;
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> command = {"mpirun", "-np", std::to_string(nproc)};
  if (::geteuid() == 0) command.push_back("--allow-run-as-root");
  if (nproc > static_cast<int64_t>(cores)) command.push_back("--oversubscribe");
  if (!std::getenv("OMP_NUM_THREADS"))
    ::setenv("OMP_NUM_THREADS", std::to_string(std::max<int64_t>(1, cores / nproc)).c_str(), 1);
  command.insert(command.end(), {"-x", "OMP_NUM_THREADS"});
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  command.push_back(ec ? args[0] : self.string());
  command.insert(command.end(), args.begin() + 1, args.end());
  std::vector<char*> exec_args;
  for (std::string& a : command) exec_args.push_back(a.data());
  exec_args.push_back(nullptr);
  ::execvp("mpirun", exec_args.data());
  fail("--nproc ", nproc, ": could not start mpirun (", std::strerror(errno),
       "); it comes with OpenMPI: apt-get install openmpi-bin libopenmpi-dev (or `make deps`)");
}

int gpu_for_local_rank(int local_rank, int local_size, int gpus) {
  if (local_size < 2 || local_rank < 0 || local_rank >= local_size || gpus < local_size) return -1;
  return local_rank;
}

int assign_gpu_to_local_rank() {
  if (std::getenv("CUDA_VISIBLE_DEVICES")) return -1;
  // OpenMPI, then MPICH's launcher, then Slurm, then torchrun.
  const auto number = [](std::initializer_list<const char*> names) {
    for (const char* name : names)
      if (const char* value = std::getenv(name); value && *value) return std::atoi(value);
    return -1;
  };
  const int local_rank = number({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"});
  const int local_size =
      number({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "LOCAL_WORLD_SIZE"});
  // The driver lists one directory per GPU; CUDA itself must not start before the choice.
  int gpus = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++gpus;
  const int gpu = gpu_for_local_rank(local_rank, local_size, gpus);
  if (gpu >= 0) ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(gpu).c_str(), 1);
  return gpu;
}

}  // namespace mcdl::tools
