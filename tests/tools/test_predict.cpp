// ./mcdl_predict on a trained run: classes.csv names the known clusters, the tool's clusters for
// the run's unlabelled images are the run's own predictions, the labelled images get their
// class's name, and a GCD run (no classifier) is refused.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "mcdl/trainer.h"
#include "tests/synthetic_folder_dataset.h"
#include "tests/tool_binary.h"
#include "tools/common/csv_table.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

int run_predict(const std::string& arguments, const fs::path& err) {
  const std::string command = testing::tool_binary("mcdl_predict") + " " + arguments + " > /dev/null 2> '" + err.string() + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("mcdl_predict: the run's model on new images, known classes by name") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_predict")), "build ./mcdl_predict first (make test does)");
  const fs::path scratch = fs::temp_directory_path() / ("mcdl-predict-" + std::to_string(::getpid()));
  const fs::path dataset = testing::coloured_squares_dataset("predict");
  TrainConfig c = testing::squares_run_config(dataset, scratch / "run");
  c.method = "simgcd";
  c.epochs = 6;
  run_training(c, false);

  const tools::CsvTable classes = tools::read_csv((scratch / "run" / "classes.csv").string());
  REQUIRE(classes.rows.size() == static_cast<size_t>(testing::kSquareOldClasses));
  CHECK(classes.rows[0] == std::vector<std::string>{"0", "0", "class0"});

  // The unlabelled images: the same clusters as the run's own last evaluation.
  const fs::path out = scratch / "unlabelled.csv", err = scratch / "stderr.txt";
  REQUIRE(run_predict("--checkpoint " + (scratch / "run").string() + " " + (dataset / "unlabelled").string() +
                          " --device cpu -o " + out.string(),
                      err) == 0);
  const tools::CsvTable predicted = tools::read_csv(out.string());
  CHECK(predicted.header == std::vector<std::string>{"path", "cluster", "class", "probability"});
  std::map<std::string, std::string> cluster_of_path;
  for (const auto& row : predicted.rows) {
    cluster_of_path[fs::canonical(row[0]).string()] = row[1];
    const double p = std::stod(row[3]);
    CHECK((p > 0.0 && p <= 1.0));
    const int64_t cluster = std::stoll(row[1]);
    CHECK(row[2] == (cluster < testing::kSquareOldClasses ? "class" + row[1] : "new-" + row[1]));
  }
  const tools::CsvTable split = tools::read_csv((scratch / "run" / "split.csv").string());
  const tools::CsvTable own = tools::read_csv((scratch / "run" / "predictions.csv").string());
  std::map<std::string, std::string> path_of_id;
  for (const auto& row : split.rows) path_of_id[row[0]] = row[1];
  REQUIRE(own.rows.size() == predicted.rows.size());
  for (const auto& row : own.rows) {
    INFO("image ", path_of_id.at(row[0]));
    CHECK(cluster_of_path.at(fs::canonical(path_of_id.at(row[0])).string()) == row[1]);
  }

  // A broken classes.csv is an error naming the file and the line, not a silent wrong class.
  std::ofstream(scratch / "run" / "classes.csv") << "cluster,class_id,name\n0,0\n";
  CHECK(run_predict("--checkpoint " + (scratch / "run").string() + " " + (dataset / "unlabelled").string() +
                        " --device cpu -o " + (scratch / "broken.csv").string(),
                    err) == 1);
  CHECK(testing::read_text(err).find("classes.csv:2") != std::string::npos);

  // A GCD run has no classifier head.
  TrainConfig gcd = testing::squares_run_config(dataset, scratch / "gcd");
  gcd.method = "gcd";
  gcd.epochs = 1;
  run_training(gcd, false);
  CHECK(run_predict("--checkpoint " + (scratch / "gcd").string() + " " + (dataset / "unlabelled").string() +
                        " --device cpu -o " + (scratch / "gcd.csv").string(),
                    err) == 1);
  CHECK(testing::read_text(err).find("no classifier head") != std::string::npos);
  fs::remove_all(scratch);
}
