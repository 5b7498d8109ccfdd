// ./mcdl_train across processes: `mpirun -np 2` and `-np 3` (oversubscribed on two cores, one
// thread each) give the metrics (timing columns aside), predictions and checkpoint tensors of one
// process with the same --shards, byte for byte, for SimGCD, SimGCD + MCDL and GCD + MCDL; so does
// --nproc, which starts mpirun itself. Bad multi-process input ends every rank with one message.
// The test harness, not the user, handles running as root and oversubscription.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "tests/run_checks.h"
#include "tests/synthetic_folder_dataset.h"
#include "tests/tool_binary.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

using Outcome = testing::CommandOutcome;

// The plugin next to the repository's tools (make builds it there), for the instrumented tools too.
std::string plugin_path() { return fs::absolute("libmcdl_mpi.so").string(); }

// `command` with one OpenMP thread per process, at most 5 minutes (a deadlock fails, not hangs).
Outcome run(const fs::path& scratch, const std::string& command) {
  return testing::run_command("OMP_NUM_THREADS=1 MCDL_MPI_PLUGIN='" + plugin_path() +
                                  "' ASAN_OPTIONS=detect_leaks=0 timeout 300 " + command,
                              scratch / "stderr.txt");
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

// The same run: metrics.csv without its timing columns, predictions.csv and every checkpoint
// tensor's bytes.
void check_same_run(const fs::path& a, const fs::path& b) {
  CHECK(testing::metrics_without_timing(a / "metrics.csv") == testing::metrics_without_timing(b / "metrics.csv"));
  CHECK(testing::read_text(a / "predictions.csv") == testing::read_text(b / "predictions.csv"));
  testing::check_same_checkpoints(a / "checkpoints" / "last.safetensors", b / "checkpoints" / "last.safetensors");
}

// A scratch directory, the squares dataset and the tool, for one test case.
struct MpiRuns {
  fs::path scratch = fs::temp_directory_path() / ("mcdl-mpi-runs-" + std::to_string(::getpid()));
  fs::path data = testing::coloured_squares_dataset("mpi");
  std::string tool = testing::tool_binary("mcdl_train");
  MpiRuns() {
    fs::remove_all(scratch);
    fs::create_directories(scratch);
  }
  ~MpiRuns() { fs::remove_all(scratch); }

  // `launcher` ("" or mpirun(N)) with mcdl_train: its outcome.
  Outcome start(const std::string& launcher, const std::string& arguments) const {
    return run(scratch, launcher + tool + " " + arguments);
  }
  // A training of `method` into scratch/name that must succeed.
  fs::path train(const std::string& launcher, const std::string& method, const std::string& name,
                 const std::string& extra = "") const {
    const Outcome outcome = start(launcher, train_arguments(method, data, scratch / name) + extra);
    REQUIRE_MESSAGE(outcome.status == 0, outcome.err);
    return scratch / name;
  }
};

}  // namespace

TEST_CASE("mcdl_train under mpirun: 2 and 3 processes give one process's run byte for byte") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_train")), "build ./mcdl_train first (make test does)");
  REQUIRE_MESSAGE(fs::exists(plugin_path()), "build libmcdl_mpi.so first (make test does)");
  const MpiRuns runs;
  for (const std::string method : {"simgcd", "simgcd+mcdl", "gcd+mcdl"}) {
    CAPTURE(method);
    const fs::path one = runs.train("", method, method + "-1");
    for (int processes : {2, 3}) {
      CAPTURE(processes);
      check_same_run(one, runs.train(mpirun(processes), method, method + "-" + std::to_string(processes)));
    }
  }
}

TEST_CASE("mcdl_train --nproc 2 starts mpirun itself and gives one process's run") {
  const MpiRuns runs;
  check_same_run(runs.train("", "simgcd+mcdl", "one"), runs.train("", "simgcd+mcdl", "two", " --nproc 2"));
}

TEST_CASE("mcdl_train under mpirun: --batch-stats local on 2 processes gives one process's run byte for byte") {
  const MpiRuns runs;
  check_same_run(runs.train("", "simgcd+mcdl", "one", " --batch-stats local"),
                 runs.train(mpirun(2), "simgcd+mcdl", "two", " --batch-stats local"));
}

TEST_CASE("mcdl_train under mpirun: bad multi-process input ends every rank with one clear message") {
  const MpiRuns runs;
  const std::string& tool = runs.tool;
  const std::string args = train_arguments("simgcd", runs.data, runs.scratch / "bad");

  // A shard count that the processes do not divide.
  Outcome outcome = runs.start(mpirun(4), args);
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("--shards 6 is not a multiple of the 4 processes") != std::string::npos);

  // Ranks started with different settings (mpirun's colon syntax: one command per rank).
  outcome = runs.start(mpirun(1), args + " : -np 1 " + tool + " " + args + " --lr 0.05");
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("rank 1 was started with a different configuration than rank 0") != std::string::npos);
  CHECK(outcome.err.find("error on rank ") != std::string::npos);  // each rank says which it is

  // Ranks running different builds of the program.
  const fs::path other = runs.scratch / "mcdl_train_other";
  fs::copy_file(tool, other);
  { std::ofstream(other, std::ios::app) << "another build"; }
  outcome = runs.start(mpirun(1), args + " : -np 1 " + other.string() + " " + args);
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("different program") != std::string::npos);

  // MCDL_MPI_SIDE_CHANNEL with a bad value, or set on one rank only.
  outcome = runs.start(mpirun(2) + "env MCDL_MPI_SIDE_CHANNEL=maybe ", args);
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("MCDL_MPI_SIDE_CHANNEL is 'maybe': expected on or off") != std::string::npos);
  outcome = runs.start(mpirun(1), args + " : -np 1 env MCDL_MPI_SIDE_CHANNEL=off " + tool + " " + args);
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("MCDL_MPI_SIDE_CHANNEL alike on every rank") != std::string::npos);

  // The plugin missing.
  outcome = runs.start("env MCDL_MPI_PLUGIN=/nonexistent/libmcdl_mpi.so " + mpirun(2), args);
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("the MPI plugin libmcdl_mpi.so could not be loaded") != std::string::npos);
  CHECK(outcome.err.find("make mpi") != std::string::npos);

  // Pretraining is one process only.
  outcome = run(runs.scratch, mpirun(2) + testing::tool_binary("mcdl_pretrain") +
                                  " fmnist --model img=28,patch=7,dim=16,depth=1,heads=2,chans=1 -o " +
                                  (runs.scratch / "pretrained.safetensors").string());
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("mcdl_pretrain runs in one process") != std::string::npos);

  // --nproc with a bad count.
  outcome = runs.start("", args + " --nproc 0");
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("--nproc needs a process count") != std::string::npos);
}

TEST_CASE("mcdl_train under mpirun: the processes build one --cache-dir image cache at once, and later runs read it") {
  const MpiRuns runs;
  const std::string cache = " --cache-dir '" + (runs.scratch / "cache").string() + "'";
  const fs::path one = runs.train("", "simgcd", "one");
  check_same_run(one, runs.train(mpirun(3), "simgcd", "three", cache));
  // One cache, whole under its name; no process's temporary file left beside it.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(runs.scratch / "cache")) names.push_back(entry.path().filename().string());
  REQUIRE(names.size() == 1);
  CHECK(names[0].find(".tmp") == std::string::npos);
  CHECK(names[0].ends_with(".imgcache"));
  check_same_run(one, runs.train(mpirun(2), "simgcd", "two", cache));
}

TEST_CASE("mcdl_train --image-cache off decodes each image when read: the same run, on 1 and on 2 processes") {
  const MpiRuns runs;
  const fs::path once = runs.train("", "simgcd+mcdl", "once", " --image-cache all");
  check_same_run(once, runs.train("", "simgcd+mcdl", "off", " --image-cache off"));
  check_same_run(once, runs.train(mpirun(2), "simgcd+mcdl", "off-2", " --image-cache off"));
}

TEST_CASE("mcdl_train under mpirun: a run stopped on 2 processes resumes on 3, and on 1, to the uninterrupted run") {
  const MpiRuns runs;
  const fs::path whole = runs.train("", "simgcd+mcdl", "whole");
  // 9 steps per epoch: stopped inside the second epoch, after the first one's checkpoint.
  for (const auto& [name, resumer] : {std::pair{"on3", mpirun(3)}, std::pair{"on1", std::string()}}) {
    CAPTURE(name);
    const fs::path parts = runs.train(mpirun(2), "simgcd+mcdl", name, " --max-iters 12");
    const Outcome outcome = runs.start(resumer, "--resume '" + parts.string() + "' --max-iters 0");
    REQUIRE_MESSAGE(outcome.status == 0, outcome.err);
    check_same_run(whole, parts);
  }
}

TEST_CASE("mcdl_train under mpirun without a side channel: the banks sent between steps, the same runs and resumes") {
  const MpiRuns runs;
  const std::string off = "env MCDL_MPI_SIDE_CHANNEL=off ";
  const fs::path whole = runs.train("", "simgcd+mcdl", "whole");
  const Outcome two = runs.start(mpirun(2) + off, train_arguments("simgcd+mcdl", runs.data, runs.scratch / "two"));
  REQUIRE_MESSAGE(two.status == 0, two.err);
  CHECK(two.err.find("go to rank 0 a piece after each training step") != std::string::npos);
  check_same_run(whole, runs.scratch / "two");
  // Stopped 3 steps into the second epoch, with the first epoch's banks partly sent; resumed on 3.
  const fs::path parts = runs.train(mpirun(2) + off, "simgcd+mcdl", "parts", " --max-iters 12");
  const Outcome resumed = runs.start(mpirun(3) + off, "--resume '" + parts.string() + "' --max-iters 0");
  REQUIRE_MESSAGE(resumed.status == 0, resumed.err);
  check_same_run(whole, parts);
}

TEST_CASE("mcdl_train under mpirun: a rank that dies ends the others, and the last checkpoint stays whole") {
  const MpiRuns runs;
  const fs::path out = runs.scratch / "dies";
  // Rank 1 is a shell that starts its mcdl_train, kills it with SIGKILL a moment later and then
  // itself, so that mpirun sees rank 1 die of a signal.
  const std::string args = train_arguments("simgcd+mcdl", runs.data, out) + " --epochs 50";
  const fs::path rank1 = runs.scratch / "rank1.sh";
  std::ofstream(rank1) << runs.tool << " " << args << " &\nsleep 4\nkill -9 $!\nwait $!\nkill -9 $$\n";
  const Outcome outcome = runs.start(mpirun(1), args + " : -np 1 sh " + rank1.string());
  CHECK(outcome.status != 0);
  CHECK(outcome.err.find("rank 1") != std::string::npos);
  const fs::path checkpoint = out / "checkpoints" / "last.safetensors";
  if (fs::exists(checkpoint)) CHECK_NOTHROW(load_safetensors(checkpoint.string()));
}
