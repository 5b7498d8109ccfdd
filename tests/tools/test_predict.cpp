// ./mcdl_predict on a trained run: classes.csv names the known clusters, and the tool's clusters
// for the run's unlabelled images are the run's own predictions, for a SimGCD run (the head) and
// a GCD run (the nearest final k-means centre); a GCD run without its centres is refused.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "mcdl/run/trained_model.h"
#include "mcdl/evaluation/features.h"
#include "mcdl/harness/run.h"
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

// Checks a prediction CSV's rows (probability, class column) and that its cluster of every image
// of the run's predictions.csv is the run's own.
void check_run_clusters(const fs::path& run, const fs::path& csv) {
  const tools::CsvTable predicted = tools::read_csv(csv.string());
  CHECK(predicted.header == std::vector<std::string>{"path", "cluster", "class", "probability"});
  std::map<std::string, std::string> cluster_of_path;
  for (const auto& row : predicted.rows) {
    cluster_of_path[fs::canonical(row[0]).string()] = row[1];
    const double p = std::stod(row[3]);
    CHECK((p > 0.0 && p <= 1.0));
    const int64_t cluster = std::stoll(row[1]);
    CHECK(row[2] == (cluster < testing::kSquareOldClasses ? "class" + row[1] : "new-" + row[1]));
  }
  const tools::CsvTable split = tools::read_csv((run / "split.csv").string());
  const tools::CsvTable own = tools::read_csv((run / "predictions.csv").string());
  std::map<std::string, std::string> path_of_id;
  for (const auto& row : split.rows) path_of_id[row[0]] = row[1];
  REQUIRE(own.rows.size() == predicted.rows.size());
  for (const auto& row : own.rows) {
    INFO("image ", path_of_id.at(row[0]));
    CHECK(cluster_of_path.at(fs::canonical(path_of_id.at(row[0])).string()) == row[1]);
  }
}

}  // namespace

TEST_CASE("mcdl_predict: the run's model on new images, known classes by name") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_predict")), "build ./mcdl_predict first (make test does)");
  const fs::path scratch = fs::temp_directory_path() / ("mcdl-predict-" + std::to_string(::getpid()));
  const fs::path dataset = testing::coloured_squares_dataset("predict");
  TrainConfig c = testing::squares_run_config(dataset, scratch / "run");
  c.method = parse_method("simgcd");
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
  check_run_clusters(scratch / "run", out);

  // A broken classes.csv is an error naming the file and the line, not a silent wrong class.
  std::ofstream(scratch / "run" / "classes.csv") << "cluster,class_id,name\n0,0\n";
  CHECK(run_predict("--checkpoint " + (scratch / "run").string() + " " + (dataset / "unlabelled").string() +
                        " --device cpu -o " + (scratch / "broken.csv").string(),
                    err) == 1);
  CHECK(testing::read_text(err).find("classes.csv:2") != std::string::npos);

  fs::remove_all(scratch);
}

namespace {

// The probability column of a GCD run's predictions, recomputed from its definition: the
// softmax over the centres of cos(x, c_k) / 0.1 at the row's cluster, x the image's L2-normalised
// feature through the checkpoint's backbone.
void check_centre_probabilities(const fs::path& run, const fs::path& csv) {
  const tools::CsvTable predicted = tools::read_csv(csv.string());
  std::vector<std::string> paths;
  for (const auto& row : predicted.rows) paths.push_back(row[0]);
  VisionTransformer backbone = load_checkpoint_backbone(run.string());
  FeatureOptions options;
  options.image_size = testing::kSquareImageSize;
  const Tensor x = extract_features(backbone, paths, options).to(DType::f64);
  const Tensor c = load_safetensors((run / "centres.safetensors").string()).tensors.at("centres").to(DType::f64);
  const int64_t k = c.size(0), d = c.size(1);
  const double* xs = x.data<double>();
  const double* cs = c.data<double>();
  for (size_t i = 0; i < paths.size(); ++i) {
    std::vector<double> logit(static_cast<size_t>(k));
    double top = -1e300, sum = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      double dot = 0.0, norm = 0.0;
      for (int64_t e = 0; e < d; ++e) {
        dot += xs[static_cast<int64_t>(i) * d + e] * cs[j * d + e];
        norm += cs[j * d + e] * cs[j * d + e];
      }
      logit[static_cast<size_t>(j)] = dot / std::sqrt(norm) / 0.1;
      top = std::max(top, logit[static_cast<size_t>(j)]);
    }
    for (double l : logit) sum += std::exp(l - top);
    const size_t cluster = static_cast<size_t>(std::stoll(predicted.rows[i][1]));
    INFO("image ", paths[i]);
    CHECK(std::stod(predicted.rows[i][3]) == doctest::Approx(std::exp(logit[cluster] - top) / sum).epsilon(1e-4));
  }
}

}  // namespace

TEST_CASE("mcdl_predict: a GCD or GCD + MCDL run labels by the nearest of its final k-means centres") {
  REQUIRE_MESSAGE(fs::exists(testing::tool_binary("mcdl_predict")), "build ./mcdl_predict first (make test does)");
  const fs::path scratch = fs::temp_directory_path() / ("mcdl-predict-gcd-" + std::to_string(::getpid()));
  const fs::path dataset = testing::coloured_squares_dataset("predict");
  const fs::path err = scratch / "stderr.txt";
  const std::string images = " " + (dataset / "unlabelled").string() + " --device cpu -o ";
  for (const std::string method : {"gcd", "gcd+mcdl"}) {
    INFO("--method ", method);
    const fs::path run = scratch / method;
    TrainConfig c = testing::squares_gcd_config(dataset, run, method);
    c.epochs = 2;
    c.keep_every = 1;  // checkpoints/epoch_1.safetensors: a checkpoint the centres do not belong to
    run_training(c, false);
    REQUIRE(fs::exists(run / "centres.safetensors"));

    // The final ss-k-means labelled the unlabelled images and left the centres as the means of
    // that labelling; once its assignment settles (as on the squares, whose colours cluster
    // apart) each image's nearest centre is its cluster, so the tool's clusters are the run's
    // exactly. (A run stopped by the k-means tolerance while a few images still moved could
    // differ on those few.)
    const fs::path out = scratch / (method + ".csv");
    REQUIRE(run_predict("--checkpoint " + run.string() + images + out.string(), err) == 0);
    check_run_clusters(run, out);
    check_centre_probabilities(run, out);

    // Centres of a later training state than the checkpoint given: refused, not mislabelled.
    CHECK(run_predict("--checkpoint " + (run / "checkpoints" / "epoch_1.safetensors").string() + images +
                          (scratch / "old.csv").string(),
                      err) == 1);
    CHECK(testing::read_text(err).find("training iterations but the checkpoint is after") != std::string::npos);
  }

  // A run made before the centres were kept.
  fs::remove(scratch / "gcd" / "centres.safetensors");
  CHECK(run_predict("--checkpoint " + (scratch / "gcd").string() + images + (scratch / "none.csv").string(), err) == 1);
  CHECK(testing::read_text(err).find("predates the keeping of its final k-means centres") != std::string::npos);
  CHECK_FALSE(fs::exists(scratch / "none.csv"));
  fs::remove_all(scratch);
}
