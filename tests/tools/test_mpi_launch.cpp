// mcdl_train's process set-up without a launcher: --nproc is read and removed from the arguments
// (bad counts refused), and the GPU-per-local-rank rule.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/collective.h"
#include "tools/common/mpi_launch.h"

using namespace mcdl::tools;

namespace {

std::vector<std::string> arguments_after(std::vector<std::string> args) {
  std::vector<char*> pointers;
  for (std::string& a : args) pointers.push_back(a.data());
  return start_processes_if_asked(static_cast<int>(pointers.size()), pointers.data());
}

}  // namespace

TEST_CASE("mpi launch: --nproc 1 and no --nproc run here, with --nproc taken out of the arguments") {
  using Args = std::vector<std::string>;
  CHECK(arguments_after({"mcdl_train", "fmnist", "--epochs", "2"}) == Args{"mcdl_train", "fmnist", "--epochs", "2"});
  CHECK(arguments_after({"mcdl_train", "fmnist", "--nproc", "1", "--epochs", "2"}) ==
        Args{"mcdl_train", "fmnist", "--epochs", "2"});
  CHECK_THROWS_WITH(arguments_after({"mcdl_train", "fmnist", "--nproc", "0"}),
                    doctest::Contains("--nproc needs a process count from 1 to 4096, got '0'"));
  CHECK_THROWS_WITH(arguments_after({"mcdl_train", "fmnist", "--nproc", "two"}), doctest::Contains("got 'two'"));
  CHECK_THROWS_WITH(arguments_after({"mcdl_train", "fmnist", "--nproc"}), doctest::Contains("needs a process count"));
}

TEST_CASE("mpi launch: under a launcher, --nproc must be its process count") {
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  CHECK(arguments_after({"mcdl_train", "fmnist", "--nproc", "2"}) == std::vector<std::string>{"mcdl_train", "fmnist"});
  CHECK_THROWS_WITH(arguments_after({"mcdl_train", "fmnist", "--nproc", "3"}),
                    doctest::Contains("--nproc 3 but the launcher started 2 processes"));
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
}

TEST_CASE("mpi launch: the launcher's process count is read from its environment, and checked") {
  CHECK(mcdl::launcher_world_size() == 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  CHECK(mcdl::launcher_world_size() == 3);
  ::setenv("OMPI_COMM_WORLD_SIZE", "two", 1);
  CHECK_THROWS_WITH(mcdl::launcher_world_size(), doctest::Contains("OMPI_COMM_WORLD_SIZE is 'two'"));
  ::setenv("OMPI_COMM_WORLD_SIZE", "0", 1);
  CHECK_THROWS_WITH(mcdl::launcher_world_size(), doctest::Contains("expected a process count"));
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("PMI_SIZE", "4", 1);
  CHECK(mcdl::launcher_world_size() == 4);
  ::unsetenv("PMI_SIZE");
  // torchrun: RANK and WORLD_SIZE, both needed.
  ::setenv("WORLD_SIZE", "5", 1);
  CHECK(mcdl::launcher_world_size() == 1);
  ::setenv("RANK", "2", 1);
  CHECK(mcdl::launcher_world_size() == 5);
  ::setenv("RANK", "5", 1);
  CHECK_THROWS_WITH(mcdl::launcher_world_size(), doctest::Contains("RANK is 5 but its WORLD_SIZE is 5"));
  ::setenv("RANK", "-1", 1);
  CHECK_THROWS_WITH(mcdl::launcher_world_size(), doctest::Contains("RANK is '-1'; expected a rank"));
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
}

TEST_CASE("mpi launch: each local rank takes its own GPU only where there is one for each") {
  CHECK(gpu_for_local_rank(1, 4, 8) == 1);
  CHECK(gpu_for_local_rank(3, 4, 4) == 3);
  CHECK(gpu_for_local_rank(1, 4, 2) == -1);  // fewer GPUs than processes: they share, as without the rule
  CHECK(gpu_for_local_rank(0, 1, 8) == -1);  // one process
  CHECK(gpu_for_local_rank(-1, 0, 8) == -1);  // no launcher
  CHECK(gpu_for_local_rank(4, 4, 8) == -1);  // an inconsistent environment
}
