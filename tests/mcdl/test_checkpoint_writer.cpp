// The background checkpoint writer (mcdl/run/checkpoint_writer.h): the file holds the state as it was
// when saved, whatever the tensors hold afterwards; it is the file a synchronous save writes; a
// failed write is raised by the next wait or save with RunDirectory's message; and across ranks
// (threads standing in for processes; MPI's world with or without a side channel, NCCL's through
// the emulated NCCL) rank 0 writes that same file from the rows each rank holds.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <csignal>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>

#include "engine/nccl_world.h"
#include "engine/ops.h"
#include "engine/shards.h"
#include "io/safetensors.h"
#include "kernels/cuda/runtime.h"
#include "mcdl/run/checkpoint_writer.h"
#include "tests/run_checks.h"
#include "tests/thread_world.h"

using namespace mcdl;
using mcdl::testing::ThreadWorld;
namespace fs = std::filesystem;

namespace {

fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// What an optimizer step does to its parameters: new values written into the same buffer.
void overwrite(Tensor& t, const Tensor& host_values) {
  if (t.device().is_cpu())
    std::memcpy(t.raw_data(), host_values.raw_data(), t.nbytes());
  else
    cuda::copy_host_to_device(t.raw_data(), host_values.raw_data(), t.nbytes());
}

}  // namespace

TEST_CASE("checkpoint writer: the file holds the state at the save, byte for byte what a synchronous save writes") {
  const fs::path dir = fresh_directory("mcdl-checkpoint-writer");
  const auto one = single_process();
  for (const Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device);
    const RunDirectory run(dir.string());
    Tensor weights = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).to(device);
    Tensor counts = from_vector<int64_t>({7, 8}, {2}).to(device);
    const std::map<std::string, std::string> metadata = {{"epoch", "3"}};
    CheckpointWriter writer(run, *one);
    writer.save({{"w", weights}, {"n", counts}}, {}, metadata, 2, 3);
    // The next step changes the live tensors at once, in place.
    overwrite(weights, full({2, 3}, -1.0));
    overwrite(counts, zeros({2}, DType::i64));
    writer.wait();

    const fs::path expected = dir / "expected.safetensors";
    save_safetensors(expected.string(),
                     {{"w", from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}, {"n", from_vector<int64_t>({7, 8}, {2})}},
                     metadata);
    CHECK(testing::read_text(run.last_checkpoint()) == testing::read_text(expected));
    // keep_every 3 keeps epoch index 2 (the third) as a copy too.
    CHECK(testing::read_text(dir / "checkpoints/epoch_3.safetensors") == testing::read_text(expected));

    // A second save replaces the first once written.
    writer.save({{"w", weights}}, {}, metadata, 3, 3);
    writer.wait();
    CHECK(load_safetensors(run.last_checkpoint()).tensors.at("w").to_vector<float>() == std::vector<float>(6, -1.0f));
    CHECK_FALSE(fs::exists(dir / "checkpoints/epoch_4.safetensors"));
    fs::remove_all(dir);
  }
}

TEST_CASE("checkpoint writer: a failed write is raised by the next wait or save, naming the intact last checkpoint") {
  const fs::path dir = fresh_directory("mcdl-checkpoint-writer-fails");
  const RunDirectory run(dir.string());
  const auto one = single_process();
  const Tensor weights = from_vector<float>({1, 2}, {2});
  CheckpointWriter writer(run, *one);
  writer.save({{"w", weights}}, {}, {}, 0, 0);
  writer.wait();
  const std::string good = testing::read_text(run.last_checkpoint());

  // checkpoints/ replaced by a plain file: the next write cannot create its temporary file.
  const fs::path checkpoints = dir / "checkpoints";
  fs::rename(checkpoints, dir / "moved");
  std::ofstream(checkpoints) << "not a directory";
  writer.save({{"w", weights * 2.0}}, {}, {}, 1, 0);  // started: the error comes later
  const std::string message = "the checkpoint after epoch 2 was not saved, so the run stops";
  SUBCASE("raised by wait") { CHECK_THROWS_WITH(writer.wait(), doctest::Contains(message.c_str())); }
  SUBCASE("raised by the next save, which starts no write") {
    CHECK_THROWS_WITH(writer.save({{"w", weights * 3.0}}, {}, {}, 2, 0), doctest::Contains(message.c_str()));
    CHECK_NOTHROW(writer.wait());  // raised once; nothing in flight
  }
  CHECK(testing::read_text(dir / "moved/last.safetensors") == good);
  CHECK(std::distance(fs::directory_iterator(dir / "moved"), fs::directory_iterator()) == 1);  // no temporary left
  fs::remove_all(dir);
}

namespace {

// A checkpoint's state as a run across ranks holds it: the model whole on every rank, and the
// banks' rows in blocks, named so that a whole tensor comes before, between and after them.
struct RankedState {
  std::map<std::string, Tensor> whole = {{"a.model", reshape(arange(6, DType::f32), {2, 3})},
                                         {"c.model", from_vector<int64_t>({5}, {1})},
                                         {"z.model", full({4}, 0.5)}};
  std::map<std::string, Tensor> in_rows = {{"b.probs", reshape(arange(9 * 4 * 8, DType::f32), {9, 4, 8})},
                                           {"b.filled", arange(9, DType::i64)},
                                           {"d.classes", reshape(arange(18, DType::i32), {9, 2})}};
  const std::map<std::string, std::string> metadata = {{"epoch", "2"}};

  // Rank `rank`'s blocks of `ranks`, copies it may change.
  std::map<std::string, RowBlocks> blocks_of(int rank, int ranks) const {
    const auto blocks = Shards::ranges(9, ranks);
    const auto [begin, end] = blocks[static_cast<size_t>(rank)];
    std::map<std::string, RowBlocks> out;
    for (const auto& [name, t] : in_rows) out[name] = {slice(t, 0, begin, end).clone(), blocks};
    return out;
  }
  // The pieces rank 0 asks for, at most `piece_bytes` each: b.filled's and d.classes' 8-byte rows
  // fit one piece; b.probs' 128-byte rows take ceil(9 / rows per piece).
  static int pieces(size_t piece_bytes) {
    const int64_t probs_rows = std::max<int64_t>(1, static_cast<int64_t>(piece_bytes / 128));
    return 2 + static_cast<int>((9 + probs_rows - 1) / probs_rows);
  }
  // The file one process writes of it all.
  std::string expected_file(const fs::path& dir) const {
    std::map<std::string, Tensor> all = whole;
    all.insert(in_rows.begin(), in_rows.end());
    const fs::path path = dir / "expected.safetensors";
    save_safetensors(path.string(), all, metadata);
    return testing::read_text(path);
  }
  // What the steps after a save do to a rank's blocks: every byte changed, in place.
  static void overwrite(std::map<std::string, RowBlocks>& rows) {
    for (auto& [name, block] : rows)
      if (block.own.numel() > 0) std::memset(block.own.raw_data(), 0xff, block.own.nbytes());
  }
};

// A test's scratch directory (removed at the end), the state, the file one process writes of it
// and the run directory the ranks write into.
struct RankedFiles {
  explicit RankedFiles(const std::string& name) : dir(fresh_directory(name)) {
    fs::create_directories(dir);
    expected = state.expected_file(dir);
  }
  ~RankedFiles() { fs::remove_all(dir); }
  fs::path dir;
  RankedState state;
  std::string expected;
  fs::path run_dir = dir / "run";
};

// A rank's world that counts the gathers made on it (how the writer sends rows without a side
// channel); the rest goes to the rank's own world.
class CountedGathers final : public Collective {
 public:
  explicit CountedGathers(Collective& rank) : rank_(rank) {}
  int gathers = 0;

  int rank() const override { return rank_.rank(); }
  int size() const override { return rank_.size(); }
  std::string transport() const override { return rank_.transport(); }
  void all_gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts) override {
    rank_.all_gather(send, send_bytes, receive, counts);
  }
  void gather(const void* send, size_t send_bytes, void* receive, const std::vector<size_t>& counts,
              int root) override {
    ++gathers;
    rank_.gather(send, send_bytes, receive, counts, root);
  }
  void broadcast(void* data, size_t bytes, int root) override { rank_.broadcast(data, bytes, root); }
  void barrier() override { rank_.barrier(); }
  [[noreturn]] void abort(int code) override {
    rank_.abort(code);
    std::abort();  // not reached: abort ends the run
  }
  Collective* side_channel() override { return rank_.side_channel(); }

 private:
  Collective& rank_;
};

}  // namespace

TEST_CASE("checkpoint writer across ranks: rank 0 writes the file one process writes, the banks' rows sent to it") {
  const RankedFiles files("mcdl-checkpoint-writer-ranks");
  const RankedState& state = files.state;
  for (const bool side_channel : {true, false}) {
    for (const int ranks : {2, 3, 12}) {  // 12: more ranks than rows, the last blocks empty
      // Pieces of whole tensors, and of a row or two (b.probs' rows are 128 bytes).
      const size_t piece_bytes = ranks == 3 ? 300 : size_t(1) << 28;
      CAPTURE(side_channel);
      CAPTURE(ranks);
      const fs::path run_dir = files.dir / ("run-" + std::to_string(ranks) + (side_channel ? "-side" : ""));
      ThreadWorld(ranks, side_channel).run([&](Collective& rank_world) {
        CountedGathers world(rank_world);
        const RunDirectory run(run_dir.string(), world.rank() == 0);
        CheckpointWriter writer(run, world, piece_bytes);
        std::map<std::string, RowBlocks> rows = state.blocks_of(world.rank(), ranks);
        writer.save(state.whole, rows, state.metadata, 1, 2);
        // The next epoch: its steps change the bank in place and exchange on the world while the
        // rows go to rank 0 (on the side channel, or a piece after each step).
        RankedState::overwrite(rows);
        std::vector<int64_t> ranks_seen(static_cast<size_t>(ranks));
        const int64_t me = world.rank();
        const int steps = 3;
        for (int step = 0; step < steps; ++step) {
          world.all_gather(&me, sizeof me, ranks_seen.data(), std::vector<size_t>(ranks_seen.size(), sizeof me));
          writer.send_piece();
        }
        CHECK(ranks_seen.back() == ranks - 1);
        const int between_steps = world.gathers;
        writer.wait();
        const int in_wait = world.gathers - between_steps;
        if (side_channel) {  // nothing on the world
          CHECK(between_steps == 0);
          CHECK(in_wait == 0);
        } else {  // a piece per step while rank 0's queue (2) has room, the rest (3 ranks: 7 pieces) in wait
          const int pieces = RankedState::pieces(piece_bytes);
          CHECK(between_steps >= std::min(2, pieces));
          CHECK(between_steps <= std::min(steps, pieces));
          CHECK(in_wait == pieces - between_steps);
          CHECK(pieces == (ranks == 3 ? 7 : 3));
        }
      });
      CHECK(testing::read_text(run_dir / "checkpoints/last.safetensors") == files.expected);
      CHECK(testing::read_text(run_dir / "checkpoints/epoch_2.safetensors") == files.expected);
    }
  }
}

TEST_CASE("checkpoint writer across ranks: a write that fails on rank 0 still takes every rank's rows, and the next save works") {
  const RankedFiles files("mcdl-checkpoint-writer-ranks-fail");
  const RankedState& state = files.state;
  const fs::path& run_dir = files.run_dir;
  // A full disk, stood in for by a file size limit: the write fails inside the second streamed
  // tensor (b.probs, 1,152 bytes after a.model's 24 and b.filled's 72), sent a row (128 bytes) at a
  // time, with more of its rows and d.classes still to come.
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, files.expected.data(), sizeof header_bytes);
  const rlimit limit{static_cast<rlim_t>(8 + header_bytes + 24 + 72 + 500), RLIM_INFINITY};
  for (const bool side_channel : {true, false}) {
    CAPTURE(side_channel);
    ThreadWorld(3, side_channel).run([&](Collective& world) {
      const RunDirectory run(run_dir.string(), world.rank() == 0);
      CheckpointWriter writer(run, world, 64);
      const std::map<std::string, RowBlocks> rows = state.blocks_of(world.rank(), 3);
      rlimit before{};
      world.barrier();
      if (world.rank() == 0) {
        ::getrlimit(RLIMIT_FSIZE, &before);
        std::signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG
        ::setrlimit(RLIMIT_FSIZE, &limit);
      }
      world.barrier();
      writer.save(state.whole, rows, state.metadata, 0, 0);
      for (int step = 0; step < 4; ++step) writer.send_piece();  // rank 0 takes, then drops, pieces
      if (world.rank() == 0) {
        CHECK_THROWS_WITH(writer.wait(), doctest::Contains("the checkpoint after epoch 1 was not saved"));
        ::setrlimit(RLIMIT_FSIZE, &before);
        std::signal(SIGXFSZ, SIG_DFL);
      } else {
        CHECK_NOTHROW(writer.wait());
      }
      world.barrier();
      writer.save(state.whole, rows, state.metadata, 1, 0);
      CHECK_NOTHROW(writer.wait());
    });
    CHECK(testing::read_text(run_dir / "checkpoints/last.safetensors") == files.expected);
  }
}

TEST_CASE("checkpoint writer between steps: a run that ends before its rows are sent keeps the checkpoint before") {
  const RankedFiles files("mcdl-checkpoint-writer-given-up");
  const RankedState& state = files.state;
  const fs::path& run_dir = files.run_dir;
  ThreadWorld(3, false).run([&](Collective& world) {
    const RunDirectory run(run_dir.string(), world.rank() == 0);
    std::map<std::string, RowBlocks> rows = state.blocks_of(world.rank(), 3);
    {
      CheckpointWriter writer(run, world, 64);
      writer.save(state.whole, rows, state.metadata, 0, 0);
      writer.wait();
    }
    world.barrier();
    RankedState::overwrite(rows);
    {
      // The next save, a piece sent, and then an error ends the run: each rank's writer goes
      // without a wait (on its own: the ranks no longer meet).
      CheckpointWriter writer(run, world, 64);
      writer.save(state.whole, rows, state.metadata, 1, 0);
      writer.send_piece();
    }
  });
  CHECK(testing::read_text(run_dir / "checkpoints/last.safetensors") == files.expected);
  CHECK(std::distance(fs::directory_iterator(run_dir / "checkpoints"), fs::directory_iterator()) == 1);
}

TEST_CASE("checkpoint writer in the NCCL world (emulated NCCL, ranks as threads): the banks sent between steps") {
  const RankedFiles files("mcdl-checkpoint-writer-nccl");
  const RankedState& state = files.state;
  const fs::path& run_dir = files.run_dir;
  ::setenv("NCCL_COMM_ID", "127.0.0.1:29613", 1);
  const int ranks = 3;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      const std::unique_ptr<Collective> world = nccl_world(r, ranks);
      CHECK(world->side_channel() == nullptr);
      const RunDirectory run(run_dir.string(), r == 0);
      CheckpointWriter writer(run, *world, 300);  // 7 pieces
      std::map<std::string, RowBlocks> rows = state.blocks_of(r, ranks);
      writer.save(state.whole, rows, state.metadata, 1, 0);
      RankedState::overwrite(rows);
      for (int step = 0; step < 4; ++step) writer.send_piece();
      writer.wait();
    });
  for (auto& t : threads) t.join();
  ::unsetenv("NCCL_COMM_ID");
  CHECK(testing::read_text(run_dir / "checkpoints/last.safetensors") == files.expected);
}
