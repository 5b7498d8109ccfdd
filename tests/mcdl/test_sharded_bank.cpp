// MCDL's memory banks split over the ranks of a world (threads standing in for processes): each
// rank holds its own block of samples, and every query and the report's reads give one bank's
// values bit for bit on every rank; each rank's checkpoint state is its block of one bank's.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/ops.h"
#include "engine/shards.h"
#include "io/safetensors.h"
#include "mcdl/method/memory_bank.h"
#include "tests/gradcheck.h"
#include "tests/thread_world.h"

using namespace mcdl;
using namespace mcdl::testing;

namespace {

constexpr int64_t samples = 10, classes = 4, mu = 3;

// Softmax rows with distinct values, so that a row written to the wrong ring would show.
Tensor batch_probs(int64_t rows, uint64_t seed) {
  return softmax(random_tensor({rows, classes}, seed, -3.0, 3.0));
}

// What every rank reads back after the same updates: the queries of the training step, the
// bucket report's reads and the checkpoint state.
struct Reads {
  std::vector<int64_t> mode, count, filled, latest_classes;
  std::vector<float> mean, latest_confidence;
  std::map<std::string, Tensor> state;  // the checkpoint state's rows this rank holds (host copies)
  std::vector<std::pair<int64_t, int64_t>> blocks;  // each rank's rows of it
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor host = t.to(Device::cpu()).clone();  // a view (the unsharded bank's buffers) made whole
  const auto* p = static_cast<const unsigned char*>(host.raw_data());
  return {p, p + host.nbytes()};
}

// Four batches: samples named twice in a batch, rings that wrap, samples never drawn (8, 9), and
// samples of every rank's block in one batch.
Reads updated_and_read(MemoryBank& bank) {
  const std::vector<std::vector<int64_t>> batches = {
      {0, 3, 7, 3, 5}, {1, 3, 6, 0, 0, 2}, {7, 4, 3, 1}, {3, 0, 5, 5, 6, 2, 4}};
  uint64_t seed = 1;
  for (const auto& batch : batches)
    bank.update(HostIndex(batch, Device::cpu()), batch_probs(static_cast<int64_t>(batch.size()), seed++));
  const HostIndex query({9, 3, 0, 3, 8, 7, 2, 5, 1, 6, 4}, Device::cpu());
  Reads reads;
  const Consistency c = bank.consistency(query);
  reads.mode = c.mode.to_vector<int64_t>();
  reads.count = c.count.to_vector<int64_t>();
  reads.mean = bank.mean_probs(query).to_vector<float>();
  reads.filled = bank.filled();
  const MemoryBank::Latest latest = bank.latest();
  reads.latest_classes = latest.classes;
  reads.latest_confidence = latest.confidence;
  for (const auto& [name, rows] : bank.state()) {
    reads.state[name] = rows.own.to(Device::cpu()).clone();
    reads.blocks = rows.blocks;
  }
  return reads;
}

// Rows [begin, end) of a one-process state, as bytes, name by name.
std::map<std::string, std::vector<unsigned char>> block_bytes(const std::map<std::string, Tensor>& state,
                                                              std::pair<int64_t, int64_t> block) {
  std::map<std::string, std::vector<unsigned char>> out;
  for (const auto& [name, t] : state) out[name] = bytes_of(slice(t, 0, block.first, block.second));
  return out;
}

// State: each rank's own block of the one bank's.
void check_same(const Reads& got, const Reads& expected, std::pair<int64_t, int64_t> block) {
  CHECK(got.mode == expected.mode);
  CHECK(got.count == expected.count);
  CHECK(same_bits(got.mean, expected.mean));
  CHECK(got.filled == expected.filled);
  CHECK(got.latest_classes == expected.latest_classes);
  CHECK(same_bits(got.latest_confidence, expected.latest_confidence));
  CHECK(block_bytes(got.state, {0, block.second - block.first}) == block_bytes(expected.state, block));
}

}  // namespace

TEST_CASE("memory bank across ranks: each holds its block, and reads give one bank's bits") {
  MemoryBank one(samples, classes, mu);
  const Reads expected = updated_and_read(one);
  check_same(expected, expected, {0, samples});  // one process: its own state
  REQUIRE(expected.blocks == std::vector<std::pair<int64_t, int64_t>>{{0, samples}});
  REQUIRE(expected.latest_classes[8] == -1);  // never drawn
  REQUIRE(expected.filled[3] == mu);          // wrapped

  for (int ranks : {2, 3, 4, 12}) {  // 12 ranks: more than samples, the last blocks empty
    CAPTURE(ranks);
    std::mutex mutex;
    std::vector<Reads> got(static_cast<size_t>(ranks));
    std::vector<std::pair<int64_t, int64_t>> held(static_cast<size_t>(ranks));
    std::vector<int64_t> ring_rows(static_cast<size_t>(ranks));
    ThreadWorld(ranks).run([&](Collective& world) {
      MemoryBank bank(samples, classes, mu, Device::cpu(), &world);
      Reads reads = updated_and_read(bank);
      const std::lock_guard lock(mutex);
      const auto r = static_cast<size_t>(world.rank());
      got[r] = std::move(reads);
      held[r] = bank.own_samples();
    });
    CHECK(held == Shards::ranges(samples, ranks));
    for (size_t r = 0; r < got.size(); ++r) {
      CHECK(got[r].blocks == held);
      check_same(got[r], expected, held[r]);
    }
  }
}

TEST_CASE("memory bank across ranks: a checkpoint's whole state loads into each rank's block") {
  MemoryBank one(samples, classes, mu);
  const Reads expected = updated_and_read(one);
  std::map<std::string, Tensor> saved;
  for (const auto& [name, rows] : one.state()) saved[name] = rows.own.clone();

  // Saved by one process, resumed on three, then the same further updates on both.
  const std::vector<int64_t> more = {9, 9, 2, 8, 0};
  const Tensor more_probs = batch_probs(static_cast<int64_t>(more.size()), 99);
  MemoryBank resumed_one(samples, classes, mu);
  resumed_one.load_state(saved);
  resumed_one.update(HostIndex(more, Device::cpu()), more_probs);
  std::map<std::string, Tensor> expected_state;
  for (const auto& [name, rows] : resumed_one.state()) expected_state[name] = rows.own.clone();
  const std::vector<float> expected_mean = resumed_one.mean_probs(HostIndex(more, Device::cpu())).to_vector<float>();

  std::mutex mutex;
  std::vector<std::map<std::string, std::vector<unsigned char>>> states(3);
  std::vector<std::vector<float>> means(3);
  // The checkpoint as a file whose probabilities each rank reads in part (what --resume does).
  const std::string path =
      (std::filesystem::temp_directory_path() / ("mcdl-bank-" + std::to_string(::getpid()) + ".safetensors")).string();
  save_safetensors(path, saved);
  const SafetensorsFile file = load_safetensors(path, [](const std::string& name) { return name == "probs"; });
  REQUIRE(file.stored.count("probs") == 1);
  ThreadWorld(3).run([&](Collective& world) {
    MemoryBank bank(samples, classes, mu, Device::cpu(), &world);
    if (world.rank() == 1) {
      bank.load_state(file.tensors, file.stored);
    } else {
      bank.load_state(saved);
    }
    bank.update(HostIndex(more, Device::cpu()), more_probs);
    std::map<std::string, std::vector<unsigned char>> state;
    for (const auto& [name, rows] : bank.state()) state[name] = bytes_of(rows.own);
    std::vector<float> mean = bank.mean_probs(HostIndex(more, Device::cpu())).to_vector<float>();
    const std::lock_guard lock(mutex);
    states[static_cast<size_t>(world.rank())] = std::move(state);
    means[static_cast<size_t>(world.rank())] = std::move(mean);
  });
  const auto blocks = Shards::ranges(samples, 3);
  for (int r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(states[static_cast<size_t>(r)] == block_bytes(expected_state, blocks[static_cast<size_t>(r)]));
    CHECK(same_bits(means[static_cast<size_t>(r)], expected_mean));
  }
  // The further updates did change the bank.
  CHECK(block_bytes(expected.state, {0, samples}) != block_bytes(expected_state, {0, samples}));
  std::filesystem::remove(path);
}

TEST_CASE("memory bank across ranks: a device index tensor is read like a host index") {
  MemoryBank one(samples, classes, mu);
  const Tensor index = from_vector<int64_t>({4, 1, 4, 9}, {4});
  const Tensor probs = batch_probs(4, 5);
  one.update(index, probs);
  const std::vector<int64_t> expected_mode = one.consistency(index).mode.to_vector<int64_t>();
  const std::vector<float> expected_mean = one.mean_probs(index).to_vector<float>();
  std::mutex mutex;
  int agreed = 0;
  ThreadWorld(2).run([&](Collective& world) {
    MemoryBank bank(samples, classes, mu, Device::cpu(), &world);
    bank.update(index, probs);
    const bool same = bank.consistency(index).mode.to_vector<int64_t>() == expected_mode &&
                      same_bits(bank.mean_probs(index).to_vector<float>(), expected_mean);
    const std::lock_guard lock(mutex);
    agreed += same ? 1 : 0;
  });
  CHECK(agreed == 2);
  // A bad index is refused on every rank before any exchange, with the sample named.
  ThreadWorld(2).run([&](Collective& world) {
    MemoryBank bank(samples, classes, mu, Device::cpu(), &world);
    CHECK_THROWS_WITH(bank.consistency(HostIndex({3, 10}, Device::cpu())),
                      doctest::Contains("sample index 10 at position 1 is out of range for a bank of 10 samples"));
  });
}
