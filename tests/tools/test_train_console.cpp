// What a new user of ./mcdl_train reads, end to end on copies of the coloured squares dataset:
// the advice "pass --skip-bad-images" works as written (a true/false option alone is true), the
// first line then counts the images that remain, and a run without labels for its unlabelled
// images says there is nothing to score instead of printing "nan".
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/synthetic_folder_dataset.h"
#include "tests/tool_binary.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  int status;
  std::string out, err;
};

Outcome run_train(const fs::path& scratch, const std::string& arguments) {
  const fs::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  const std::string command = testing::tool_binary("mcdl_train") + " " + arguments + " > '" + out.string() + "' 2> '" +
                              err.string() + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), testing::read_text(out), testing::read_text(err)};
}

const std::string kSmall =
    " --model img=16,patch=4,dim=32,depth=2,heads=2,chans=3 --num-classes 6 --image-size 16 --device cpu"
    " --progress false --epochs 1 --max-iters 1 --mu 1 --mcdl-start 0";

fs::path dataset_copy(const fs::path& scratch, const std::string& name) {
  const fs::path copy = scratch / name;
  fs::copy(testing::coloured_squares_dataset("console-squares"), copy, fs::copy_options::recursive);
  return copy;
}

}  // namespace

TEST_CASE("mcdl_train: four unreadable images, --skip-bad-images as advised, and the count of what remains") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_train")), "build ./mcdl_train first (make test does)");
  const fs::path scratch = fs::temp_directory_path() / ("mcdl-console-bad-images-" + std::to_string(::getpid()));
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  const fs::path data = dataset_copy(scratch, "bad-images");
  // Two labelled and two unlabelled images that are not images.
  for (const char* file : {"labelled/class0/class0_0.png", "labelled/class1/class1_2.png", "unlabelled/class0_1.png",
                           "unlabelled/class4_0.png"})
    std::ofstream(data / file) << "not an image";
  const std::string run = " --out " + (scratch / "run").string();

  const Outcome refused = run_train(scratch, "folder --data-root " + data.string() + kSmall + run);
  INFO("stderr: ", refused.err);
  CHECK(refused.status == 1);
  CHECK(refused.err.find("4 training image(s) could not be read") != std::string::npos);
  CHECK(refused.err.find("pass --skip-bad-images") != std::string::npos);

  // The advice as written, the flag alone before another option.
  const Outcome skipped = run_train(scratch, "folder --data-root " + data.string() + kSmall + " --skip-bad-images" + run);
  INFO("stderr: ", skipped.err);
  CHECK(skipped.status == 0);
  CHECK(skipped.err.find("warning: skipping 4 unreadable training image(s)") != std::string::npos);
  // 6 classes of 36 squares, half of the 3 old classes' labelled: 54 labelled, 162 unlabelled.
  CHECK(skipped.err.find("folder: 212 training images (4 unreadable skipped), 6 classes (3 old): 52 labelled, "
                         "160 unlabelled") != std::string::npos);
  // The spelled-out form still works, and false still means false.
  CHECK(run_train(scratch, "folder --data-root " + data.string() + kSmall + " --skip-bad-images true" + run + "-true")
            .status == 0);
  CHECK(run_train(scratch, "folder --data-root " + data.string() + kSmall + " --skip-bad-images false" + run + "-false")
            .status == 1);
  fs::remove_all(scratch);
}

TEST_CASE("mcdl_train: without labels for the unlabelled images, 'nothing to score', not nan") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_train")), "build ./mcdl_train first (make test does)");
  const fs::path scratch = fs::temp_directory_path() / ("mcdl-console-no-labels-" + std::to_string(::getpid()));
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  const fs::path data = dataset_copy(scratch, "no-labels");
  fs::remove(data / "unlabelled_labels.csv");
  const fs::path run = scratch / "run";
  const Outcome outcome = run_train(scratch, "folder --data-root " + data.string() + kSmall + " --out " + run.string());
  INFO("stdout: ", outcome.out, "\nstderr: ", outcome.err);
  REQUIRE(outcome.status == 0);
  CHECK(outcome.out.find("epoch 1/1") != std::string::npos);
  CHECK(outcome.out.find("  no labels for the unlabelled images: nothing to score") != std::string::npos);
  CHECK(outcome.out.find("final  no labels for the evaluated images: nothing to score") != std::string::npos);
  CHECK(outcome.out.find("nan") == std::string::npos);
  CHECK(outcome.out.find("H/M/L ") != std::string::npos);  // the buckets are still counted
  // metrics.csv keeps its columns (NaN where nothing is scored); the page says why.
  const std::string metrics = testing::read_text(run / "metrics.csv");
  CHECK(metrics.find(",all,old,new,") != std::string::npos);
  const std::string page = testing::read_text(run / "report.html");
  CHECK(page.find("no labels for the unlabelled images: nothing to score") != std::string::npos);
  fs::remove_all(scratch);
}
