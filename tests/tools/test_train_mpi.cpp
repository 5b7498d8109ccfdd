// ./mcdl_train across processes: `mpirun -np 2` and `-np 3` (oversubscribed on two cores, one
// thread each) give the metrics (timing columns aside), predictions and checkpoint tensors of one
// process with the same --shards, byte for byte, for SimGCD, SimGCD + MCDL and GCD + MCDL; so does
// --nproc, which starts mpirun itself. Bad multi-process input ends every rank with one message.
// The test harness, not the user, handles running as root and oversubscription.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "io/safetensors.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"
#include "tests/tool_binary.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  int status;
  std::string err;
};

// The plugin next to the repository's tools (make builds it there), for the instrumented tools too.
std::string plugin_path() { return fs::absolute("libmcdl_mpi.so").string(); }

// `command` with one OpenMP thread per process, at most 5 minutes (a deadlock fails, not hangs).
Outcome run(const fs::path& scratch, const std::string& command) {
  const fs::path err = scratch / "stderr.txt";
  const std::string line = "OMP_NUM_THREADS=1 MCDL_MPI_PLUGIN='" + plugin_path() +
                           "' ASAN_OPTIONS=detect_leaks=0 timeout 300 " + command + " > /dev/null 2> '" +
                           err.string() + "'";
  const int status = std::system(line.c_str());
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), testing::read_text(err)};
}

// mpirun as this harness needs it: root allowed, more processes than cores allowed, the shared
// memory transport without the kernel's cross-process copy (refused in many containers).
std::string mpirun(int processes) {
  return "mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
         " -x OMP_NUM_THREADS -x MCDL_MPI_PLUGIN -x ASAN_OPTIONS -np " +
         std::to_string(processes) + " ";
}

std::string train_arguments(const std::string& method, const fs::path& data, const fs::path& out) {
  std::string arguments =
      "folder --data-root '" + data.string() + "' --out '" + out.string() +
      "' --model img=16,patch=4,dim=32,depth=2,heads=2,chans=3 --num-classes 6 --image-size 16 --device cpu"
      " --progress false --epochs 2 --batch-size 24 --shards 6 --head-hidden 64 --head-bottleneck 32"
      " --head-init-std 0.1 --grad-from-block 0 --seed 3 --method " +
      method;
  if (method != "simgcd") arguments += " --mu 1 --mcdl-start 0 --warmup-teacher-epochs 1";
  if (method == "gcd+mcdl") arguments += " --gcd-head-out 256 --kmeans-restarts 4";
  return arguments;
}

// metrics.csv without its timing columns, predictions.csv and every checkpoint tensor's bytes.
void check_same_run(const fs::path& a, const fs::path& b) {
  const auto ma = testing::metrics_columns(testing::read_text(a / "metrics.csv"));
  const auto mb = testing::metrics_columns(testing::read_text(b / "metrics.csv"));
  REQUIRE(ma.size() == mb.size());
  for (const auto& [name, values] : ma) {
    if (name == "seconds" || name == "train_seconds" || name == "eval_seconds") continue;
    CAPTURE(name);
    REQUIRE(mb.count(name) == 1);
    CHECK(values == mb.at(name));
  }
  CHECK(testing::read_text(a / "predictions.csv") == testing::read_text(b / "predictions.csv"));
  const SafetensorsFile ca = load_safetensors((a / "checkpoints" / "last.safetensors").string());
  const SafetensorsFile cb = load_safetensors((b / "checkpoints" / "last.safetensors").string());
  REQUIRE(ca.tensors.size() == cb.tensors.size());
  for (const auto& [name, tensor] : ca.tensors) {
    CAPTURE(name);
    REQUIRE(cb.tensors.count(name) == 1);
    const Tensor& other = cb.tensors.at(name);
    REQUIRE(other.nbytes() == tensor.nbytes());
    CHECK(std::memcmp(tensor.raw_data(), other.raw_data(), tensor.nbytes()) == 0);
  }
}

struct Scratch {
  fs::path path = fs::temp_directory_path() / ("mcdl-mpi-" + std::to_string(::getpid()));
  Scratch() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("mcdl_train under mpirun: 2 and 3 processes give one process's run byte for byte") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_train")), "build ./mcdl_train first (make test does)");
  REQUIRE_MESSAGE(fs::exists(plugin_path()), "build libmcdl_mpi.so first (make test does)");
  const Scratch scratch;
  const fs::path data = testing::coloured_squares_dataset("mpi");
  const std::string tool = testing::tool_binary("mcdl_train");
  for (const std::string method : {"simgcd", "simgcd+mcdl", "gcd+mcdl"}) {
    CAPTURE(method);
    const fs::path one = scratch.path / (method + "-1");
    const Outcome single = run(scratch.path, tool + " " + train_arguments(method, data, one));
    REQUIRE_MESSAGE(single.status == 0, single.err);
    for (int processes : {2, 3}) {
      CAPTURE(processes);
      const fs::path many = scratch.path / (method + "-" + std::to_string(processes));
      const Outcome outcome = run(scratch.path, mpirun(processes) + tool + " " + train_arguments(method, data, many));
      REQUIRE_MESSAGE(outcome.status == 0, outcome.err);
      check_same_run(one, many);
    }
  }
}

TEST_CASE("mcdl_train --nproc 2 starts mpirun itself and gives one process's run") {
  const Scratch scratch;
  const fs::path data = testing::coloured_squares_dataset("mpi");
  const std::string tool = testing::tool_binary("mcdl_train");
  const Outcome single = run(scratch.path, tool + " " + train_arguments("simgcd+mcdl", data, scratch.path / "one"));
  REQUIRE_MESSAGE(single.status == 0, single.err);
  const Outcome launched =
      run(scratch.path, tool + " " + train_arguments("simgcd+mcdl", data, scratch.path / "two") + " --nproc 2");
  REQUIRE_MESSAGE(launched.status == 0, launched.err);
  check_same_run(scratch.path / "one", scratch.path / "two");
}

TEST_CASE("mcdl_train under mpirun: bad multi-process input ends every rank with one clear message") {
  const Scratch scratch;
  const fs::path data = testing::coloured_squares_dataset("mpi");
  const std::string tool = testing::tool_binary("mcdl_train");
  const std::string args = train_arguments("simgcd", data, scratch.path / "bad");

  // A shard count that the processes do not divide.
  Outcome outcome = run(scratch.path, mpirun(4) + tool + " " + args);
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("--shards 6 is not a multiple of the 4 processes") != std::string::npos);

  // Ranks started with different settings (mpirun's colon syntax: one command per rank).
  outcome = run(scratch.path, mpirun(1) + tool + " " + args + " : -np 1 " + tool + " " + args + " --lr 0.05");
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("rank 1 was started with a different configuration than rank 0") != std::string::npos);

  // Ranks running different builds of the program.
  const fs::path other = scratch.path / "mcdl_train_other";
  fs::copy_file(tool, other);
  { std::ofstream(other, std::ios::app) << "another build"; }
  outcome = run(scratch.path, mpirun(1) + tool + " " + args + " : -np 1 " + other.string() + " " + args);
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("different program") != std::string::npos);

  // The plugin missing.
  outcome = run(scratch.path, "env MCDL_MPI_PLUGIN=/nonexistent/libmcdl_mpi.so " + mpirun(2) + tool + " " + args);
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("the MPI plugin libmcdl_mpi.so could not be loaded") != std::string::npos);
  CHECK(outcome.err.find("make mpi") != std::string::npos);

  // Pretraining is one process only.
  outcome = run(scratch.path, mpirun(2) + testing::tool_binary("mcdl_pretrain") +
                                  " fmnist --model img=28,patch=7,dim=16,depth=1,heads=2,chans=1 -o " +
                                  (scratch.path / "pretrained.safetensors").string());
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("mcdl_pretrain runs in one process") != std::string::npos);

  // --nproc with a bad count.
  outcome = run(scratch.path, tool + " " + args + " --nproc 0");
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("--nproc needs a process count") != std::string::npos);
}

TEST_CASE("mcdl_train under mpirun: a run stopped on 2 processes resumes on 3, and on 1, to the uninterrupted run") {
  const Scratch scratch;
  const fs::path data = testing::coloured_squares_dataset("mpi");
  const std::string tool = testing::tool_binary("mcdl_train");
  const Outcome whole = run(scratch.path, tool + " " + train_arguments("simgcd+mcdl", data, scratch.path / "whole"));
  REQUIRE_MESSAGE(whole.status == 0, whole.err);
  // 9 steps per epoch: stopped inside the second epoch, after the first one's checkpoint.
  for (const auto& [name, resumer] : {std::pair{"on3", mpirun(3) + tool}, std::pair{"on1", tool}}) {
    CAPTURE(name);
    const fs::path parts = scratch.path / name;
    Outcome outcome = run(scratch.path, mpirun(2) + tool + " " + train_arguments("simgcd+mcdl", data, parts) +
                                            " --max-iters 12");
    REQUIRE_MESSAGE(outcome.status == 0, outcome.err);
    outcome = run(scratch.path, resumer + " --resume '" + parts.string() + "' --max-iters 0");
    REQUIRE_MESSAGE(outcome.status == 0, outcome.err);
    check_same_run(scratch.path / "whole", parts);
  }
}

TEST_CASE("mcdl_train under mpirun: a rank that dies ends the others, and the last checkpoint stays whole") {
  const Scratch scratch;
  const fs::path data = testing::coloured_squares_dataset("mpi");
  const std::string tool = testing::tool_binary("mcdl_train");
  const fs::path out = scratch.path / "dies";
  // Rank 1 is a shell that starts its mcdl_train, kills it with SIGKILL a moment later and then
  // itself, so that mpirun sees rank 1 die of a signal.
  const std::string args = train_arguments("simgcd+mcdl", data, out) + " --epochs 50";
  const fs::path rank1 = scratch.path / "rank1.sh";
  std::ofstream(rank1) << tool << " " << args << " &\nsleep 4\nkill -9 $!\nwait $!\nkill -9 $$\n";
  const Outcome outcome = run(scratch.path, mpirun(1) + tool + " " + args + " : -np 1 sh " + rank1.string());
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("rank 1") != std::string::npos);
  const fs::path checkpoint = out / "checkpoints" / "last.safetensors";
  if (fs::exists(checkpoint)) CHECK_NOTHROW(load_safetensors(checkpoint.string()));
}

TEST_CASE("mcdl_train under mpirun: --batch-stats local on 2 processes gives one process's run byte for byte") {
  const Scratch scratch;
  const fs::path data = testing::coloured_squares_dataset("mpi");
  const std::string tool = testing::tool_binary("mcdl_train");
  const std::string local = " --batch-stats local";
  const Outcome single =
      run(scratch.path, tool + " " + train_arguments("simgcd+mcdl", data, scratch.path / "one") + local);
  REQUIRE_MESSAGE(single.status == 0, single.err);
  const Outcome two =
      run(scratch.path, mpirun(2) + tool + " " + train_arguments("simgcd+mcdl", data, scratch.path / "two") + local);
  REQUIRE_MESSAGE(two.status == 0, two.err);
  check_same_run(scratch.path / "one", scratch.path / "two");
}
