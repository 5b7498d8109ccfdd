#include "engine/collective.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "engine/error.h"
#include "engine/mpi_plugin_api.h"
#include "engine/nccl_world.h"

namespace mcdl {
namespace {

class SingleProcess final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string transport() const override { return "one process"; }
  void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) override {
    check(counts.size() == 1 && counts[0] == send_bytes, "all_gather: one process sends ", send_bytes,
          " bytes but the counts say otherwise");
    if (send_bytes > 0) std::memmove(receive, send, send_bytes);
  }
  void gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts,
              int root) override {
    check(root == 0, "gather: no rank ", root, " in one process");
    all_gather(send, send_bytes, receive, counts);
  }
  void broadcast(void*, size_t, int root) override { check(root == 0, "broadcast: no rank ", root, " in one process"); }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

// Where the plugin is: $MCDL_MPI_PLUGIN, else next to the executable, else the loader's search.
std::vector<std::string> plugin_candidates() {
  if (const char* path = std::getenv("MCDL_MPI_PLUGIN"); path && *path) return {path};
  std::vector<std::string> candidates;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / "libmcdl_mpi.so").string());
  candidates.push_back("libmcdl_mpi.so");
  return candidates;
}

// The plugin's interface (throws, saying what to do, when it cannot be loaded).
const McdlMpiApi* load_mpi_plugin(int launched) {
  std::string tried;
  void* handle = nullptr;
  for (const std::string& path : plugin_candidates()) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    tried += "\n  " + path + ": " + dlerror();
  }
  check(handle != nullptr, "an MPI launcher started ", launched,
        " processes, but the MPI plugin libmcdl_mpi.so could not be loaded:", tried,
        "\nbuild it with `make mpi` (it needs OpenMPI: apt-get install libopenmpi-dev openmpi-bin), or set "
        "MCDL_MPI_PLUGIN to its path");
  const auto entry = reinterpret_cast<const McdlMpiApi* (*)()>(dlsym(handle, kMcdlMpiApiSymbol));
  check(entry != nullptr, "libmcdl_mpi.so has no ", kMcdlMpiApiSymbol, ": rebuild it with `make mpi`");
  const McdlMpiApi* api = entry();
  check(api != nullptr && api->version == kMcdlMpiApiVersion, "libmcdl_mpi.so was built for another version of ",
        "this program (interface ", api ? api->version : -1, ", expected ", kMcdlMpiApiVersion,
        "): rebuild it with `make mpi`");
  return api;
}

// MCDL_MPI_SIDE_CHANNEL=off: no side channel even where MPI has full thread support (for an MPI
// whose full thread support is slow or faulty); checkpoints then travel between steps.
bool side_channel_turned_off() {
  const char* value = std::getenv("MCDL_MPI_SIDE_CHANNEL");
  if (!value || !*value || std::strcmp(value, "on") == 0) return false;
  check(std::strcmp(value, "off") == 0, "MCDL_MPI_SIDE_CHANNEL is '", value, "': expected on or off");
  return true;
}

// The collectives on one of the plugin's communicators: the world, or its side channel.
class MpiCommunicator : public Collective {
 public:
  MpiCommunicator(const McdlMpiApi* api, int comm, const char* name) : api_(api), comm_(comm), name_(name) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string transport() const override { return "MPI"; }

  void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) override {
    check(counts.size() == static_cast<size_t>(size_) && counts[static_cast<size_t>(rank_)] == send_bytes,
          "all_gather on rank ", rank_, ": the counts do not match the ", size_, " processes");
    char error[512] = "";
    check(api_->all_gather(comm_, send, send_bytes, receive, counts.data(), error, sizeof error) == 0, "MPI all-gather",
          name_, " failed on rank ", rank_, " of ", size_, ": ", error);
  }
  void gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts,
              int root) override {
    check(counts.size() == static_cast<size_t>(size_) && counts[static_cast<size_t>(rank_)] == send_bytes,
          "gather on rank ", rank_, ": the counts do not match the ", size_, " processes");
    char error[512] = "";
    check(api_->gather(comm_, send, send_bytes, receive, counts.data(), root, error, sizeof error) == 0, "MPI gather",
          name_, " failed on rank ", rank_, " of ", size_, ": ", error);
  }
  void broadcast(void* data, size_t bytes, int root) override {
    char error[512] = "";
    check(api_->broadcast(comm_, data, bytes, root, error, sizeof error) == 0, "MPI broadcast", name_,
          " failed on rank ", rank_, " of ", size_, ": ", error);
  }
  void barrier() override {
    char error[512] = "";
    check(api_->barrier(comm_, error, sizeof error) == 0, "MPI barrier", name_, " failed on rank ", rank_, " of ",
          size_, ": ", error);
  }
  [[noreturn]] void abort(int code) override {
    api_->abort(code);
    std::_Exit(code);
  }

 protected:
  const McdlMpiApi* api_;
  int comm_;
  const char* name_;  // said in messages after the operation
  int rank_ = 0, size_ = 1;
};

class MpiWorld final : public MpiCommunicator {
 public:
  explicit MpiWorld(int launched) : MpiCommunicator(load_mpi_plugin(launched), kMcdlMpiWorld, "") {
    const bool side_channel_off = side_channel_turned_off();  // a bad value stops before MPI starts
    char error[512] = "";
    int side_channel = 0;
    check(api_->init(&rank_, &size_, &side_channel, error, sizeof error) == 0, "MPI could not start: ", error);
    check(size_ == launched, "the launcher's environment says ", launched, " processes but MPI's world has ", size_);
    if (side_channel && !side_channel_off) side_ = std::make_unique<Side>(*this);
  }
  ~MpiWorld() override {
    side_.reset();
    api_->finalize();
  }
  Collective* side_channel() override { return side_.get(); }

 private:
  struct Side final : MpiCommunicator {
    explicit Side(const MpiWorld& world) : MpiCommunicator(world.api_, kMcdlMpiSideChannel, " (side channel)") {
      rank_ = world.rank_;
      size_ = world.size_;
    }
  };
  std::unique_ptr<Side> side_;
};

}  // namespace

namespace {

// A number from the launcher's environment, at least `min`: −1 when unset.
long environment_number(const char* name, long min, const char* expected) {
  const char* value = std::getenv(name);
  if (!value || !*value) return -1;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  check(*end == '\0' && n >= min && n <= INT_MAX, "the launcher's ", name, " is '", value, "'; expected ", expected);
  return n;
}

// The process count of an MPI launcher: OpenMPI's mpirun (and OpenMPI under srun), then the PMI of
// MPICH's launcher and srun --mpi=pmi2; 1 without one.
int mpi_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const long n = environment_number(name, 1, "a process count"); n > 0) return static_cast<int>(n);
  return 1;
}

// {rank, size} from a launcher that sets only RANK and WORLD_SIZE (torchrun); {0, 1} without one.
std::pair<int, int> environment_rank_and_size() {
  const long size = environment_number("WORLD_SIZE", 1, "a process count");
  const long rank = environment_number("RANK", 0, "a rank");
  if (size < 0 || rank < 0) return {0, 1};
  check(rank < size, "the launcher's RANK is ", rank, " but its WORLD_SIZE is ", size);
  return {static_cast<int>(rank), static_cast<int>(size)};
}

}  // namespace

int launcher_world_size() {
  const int mpi = mpi_world_size();
  return mpi > 1 ? mpi : environment_rank_and_size().second;
}

std::unique_ptr<Collective> single_process() { return std::make_unique<SingleProcess>(); }

namespace {
std::atomic<Collective*> several{nullptr};
}  // namespace

Collective& world() {
  static const std::unique_ptr<Collective> instance = []() -> std::unique_ptr<Collective> {
    if (const int launched = mpi_world_size(); launched > 1) return std::make_unique<MpiWorld>(launched);
    if (const auto [rank, size] = environment_rank_and_size(); size > 1) return nccl_world(rank, size);
    return single_process();
  }();
  if (instance->size() > 1) several.store(instance.get());
  return *instance;
}

Collective* multi_process_world() { return several.load(); }

void check_same_on_every_rank(Collective& world, const std::string& bytes, const std::string& what) {
  if (world.size() == 1) return;
  uint64_t length = bytes.size();
  world.broadcast(&length, sizeof length, 0);
  std::string first(length, '\0');
  if (world.rank() == 0) first = bytes;
  world.broadcast(first.data(), first.size(), 0);
  const char same = first == bytes ? 1 : 0;
  std::vector<char> all(static_cast<size_t>(world.size()));
  world.all_gather(&same, 1, all.data(), std::vector<size_t>(all.size(), 1));
  for (size_t r = 0; r < all.size(); ++r)
    check(all[r] == 1, "rank ", r, " was started with a different ", what, " than rank 0: start every process with ",
          "the same program and command");
}

}  // namespace mcdl
