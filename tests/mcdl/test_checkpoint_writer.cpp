// The background checkpoint writer (mcdl/run/checkpoint_writer.h): the file holds the state as it was
// when saved, whatever the tensors hold afterwards; it is the file a synchronous save writes; and
// a failed write is raised by the next wait or save with RunDirectory's message.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <iterator>
#include <string>

#include "engine/ops.h"
#include "io/safetensors.h"
#include "kernels/cuda/runtime.h"
#include "mcdl/run/checkpoint_writer.h"
#include "tests/run_checks.h"

using namespace mcdl;
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
  for (const Device device : {Device::cpu(), Device::cuda()}) {
    CAPTURE(device);
    const RunDirectory run(dir.string());
    Tensor weights = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).to(device);
    Tensor counts = from_vector<int64_t>({7, 8}, {2}).to(device);
    const std::map<std::string, std::string> metadata = {{"epoch", "3"}};
    CheckpointWriter writer(run);
    writer.save({{"w", weights}, {"n", counts}}, metadata, 2, 3);
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
    writer.save({{"w", weights}}, metadata, 3, 3);
    writer.wait();
    CHECK(load_safetensors(run.last_checkpoint()).tensors.at("w").to_vector<float>() == std::vector<float>(6, -1.0f));
    CHECK_FALSE(fs::exists(dir / "checkpoints/epoch_4.safetensors"));
    fs::remove_all(dir);
  }
}

TEST_CASE("checkpoint writer: a failed write is raised by the next wait or save, naming the intact last checkpoint") {
  const fs::path dir = fresh_directory("mcdl-checkpoint-writer-fails");
  const RunDirectory run(dir.string());
  const Tensor weights = from_vector<float>({1, 2}, {2});
  CheckpointWriter writer(run);
  writer.save({{"w", weights}}, {}, 0, 0);
  writer.wait();
  const std::string good = testing::read_text(run.last_checkpoint());

  // checkpoints/ replaced by a plain file: the next write cannot create its temporary file.
  const fs::path checkpoints = dir / "checkpoints";
  fs::rename(checkpoints, dir / "moved");
  std::ofstream(checkpoints) << "not a directory";
  writer.save({{"w", weights * 2.0}}, {}, 1, 0);  // started: the error comes later
  const std::string message = "the checkpoint after epoch 2 was not saved, so the run stops";
  SUBCASE("raised by wait") { CHECK_THROWS_WITH(writer.wait(), doctest::Contains(message.c_str())); }
  SUBCASE("raised by the next save, which starts no write") {
    CHECK_THROWS_WITH(writer.save({{"w", weights * 3.0}}, {}, 2, 0), doctest::Contains(message.c_str()));
    CHECK_NOTHROW(writer.wait());  // raised once; nothing in flight
  }
  CHECK(testing::read_text(dir / "moved/last.safetensors") == good);
  CHECK(std::distance(fs::directory_iterator(dir / "moved"), fs::directory_iterator()) == 1);  // no temporary left
  fs::remove_all(dir);
}
