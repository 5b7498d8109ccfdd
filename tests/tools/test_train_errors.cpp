// Bad input to ./mcdl_train, end to end: each row is a command line (on a copy of the coloured
// squares dataset, broken as the row says) and the words its one-line error must contain. No
// row may crash: each must exit with status 1 (an error) or 2 (bad usage) and say what to do.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/safetensors.h"
#include "layers/backbone_file.h"
#include "tests/synthetic_folder_dataset.h"
#include "tests/tool_binary.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

testing::CommandOutcome run_train(const fs::path& scratch, const std::string& arguments) {
  return testing::run_command(testing::tool_binary("mcdl_train") + " " + arguments, scratch / "stderr.txt");
}

// The squares dataset copied under `scratch` (so a row can break its copy).
fs::path dataset_copy(const fs::path& scratch, const std::string& name) {
  const fs::path copy = scratch / name;
  fs::copy(testing::coloured_squares_dataset("train-errors"), copy, fs::copy_options::recursive);
  return copy;
}

}  // namespace

TEST_CASE("mcdl_train: bad input ends in one clear message and a non-zero exit") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_train")), "build ./mcdl_train first (make test does)");
  const fs::path scratch = fs::temp_directory_path() / ("mcdl-bad-input-" + std::to_string(::getpid()));
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  const std::string small =
      " --model img=16,patch=4,dim=32,depth=2,heads=2,chans=3 --num-classes 6 --image-size 16 --device cpu"
      " --progress false --epochs 1 --max-iters 1";
  const fs::path good = dataset_copy(scratch, "good");

  // A layout that is not the dataset's: the folder layout needs labelled/ and unlabelled/.
  fs::create_directories(scratch / "wrong" / "images");
  // An empty class folder.
  const fs::path empty_class = dataset_copy(scratch, "empty-class");
  fs::create_directories(empty_class / "labelled" / "class9");
  // A file that is not an image, where an image is expected.
  const fs::path not_image = dataset_copy(scratch, "not-image");
  std::ofstream(not_image / "labelled" / "class0" / "notes.png") << "not an image";
  // A backbone file of another architecture (width 48, not the --model's 32).
  VisionTransformer other(parse_model_config("img=16,patch=4,dim=48,depth=2,heads=2,chans=3").backbone);
  other.initialize(1);
  save_backbone_file((scratch / "other.safetensors").string(), other);
  // A run directory from another version: its config.json has a key this version does not know.
  fs::create_directories(scratch / "future");
  std::ofstream(scratch / "future" / "config.json") << R"({"dataset": "folder", "warp-drive": 9})";

  struct Row {
    const char* what;
    std::string arguments;
    std::vector<std::string> says;
  };
  const Row rows[] = {
      {"missing dataset folder", "folder --data-root " + (scratch / "nowhere").string() + small, {"nowhere"}},
      {"wrong layout", "folder --data-root " + (scratch / "wrong").string() + small, {"labelled"}},
      {"empty class folder", "folder --data-root " + empty_class.string() + small, {"class9"}},
      {"not an image", "folder --data-root " + not_image.string() + small, {"notes.png", "--skip-bad-images"}},
      {"not an image, decoded when read", "folder --data-root " + not_image.string() + small + " --image-cache off",
       {"notes.png", "could not be read when a batch needed it"}},
      {"skipping bad images with no start-up pass",
       "folder --data-root " + good.string() + small + " --image-cache off --skip-bad-images",
       {"--skip-bad-images", "--image-cache all"}},
      {"unknown image cache mode", "folder --data-root " + good.string() + small + " --image-cache some",
       {"--image-cache", "auto, all or off"}},
      {"weights of another architecture than --model",
       "folder --data-root " + good.string() + small + " --weights " + (scratch / "other.safetensors").string(),
       {"other.safetensors", "drop --model"}},
      {"batch size 0", "folder --data-root " + good.string() + small + " --batch-size 0", {"--batch-size"}},
      {"negative learning rate", "folder --data-root " + good.string() + small + " --lr -0.1", {"--lr"}},
      {"unknown option", "folder --data-root " + good.string() + small + " --epochz 3", {"epochz"}},
      {"NCCL asked for on the CPU", "folder --data-root " + good.string() + small + " --gpu-collectives nccl",
       {"--gpu-collectives nccl", "--device cuda"}},
      {"unknown dataset", "imagenet21k" + small, {"imagenet21k", "expected one of"}},
      {"resume of a run by another version", "--resume " + (scratch / "future").string(), {"warp-drive"}},
      {"resume of no directory", "--resume " + (scratch / "nothing").string(), {"nothing: no such directory"}},
      {"resume of a folder that is no run", "--resume " + good.string(), {"no config.json there"}},
  };
  int index = 0;
  for (const Row& row : rows) {
    // Each row its own run directory (a row that wrongly succeeded must not fail the next).
    const std::string arguments = row.arguments + " --out " + (scratch / ("run" + std::to_string(index++))).string();
    INFO(row.what, ": ./mcdl_train ", arguments);
    const testing::CommandOutcome outcome = run_train(scratch, arguments);
    INFO("stderr: ", outcome.err);
    CHECK((outcome.status == 1 || outcome.status == 2));
    CHECK(outcome.err.find("error: ") != std::string::npos);
    for (const std::string& word : row.says) CHECK(outcome.err.find(word) != std::string::npos);
  }
  // An attention algorithm the engine does not have, through the environment.
  const testing::CommandOutcome outcome = testing::run_command(
      "MCDL_ATTENTION=fast " + testing::tool_binary("mcdl_train") + " folder --data-root " + good.string() + small +
          " --out " + (scratch / "attention").string(),
      scratch / "stderr.txt");
  CHECK(outcome.status == 1);
  CHECK(outcome.err.find("error: MCDL_ATTENTION: expected fused, unfused, flash, cudnn or wgmma, got 'fast'") !=
        std::string::npos);
  fs::remove_all(scratch);
}
