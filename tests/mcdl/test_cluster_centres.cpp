// A GCD run's centres.safetensors (mcdl/run/cluster_centres.h): written and read back, and every
// malformed or mismatched file refused with a message naming it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "engine/ops.h"
#include "io/safetensors.h"
#include "mcdl/run/cluster_centres.h"

using namespace mcdl;
namespace fs = std::filesystem;

TEST_CASE("cluster centres: round trip, and bad files refused naming the problem") {
  const fs::path dir = fs::temp_directory_path() / ("mcdl-centres-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / cluster_centres_file).string();
  CHECK_THROWS_WITH(load_cluster_centres(dir.string(), 12), doctest::Contains("predates the keeping"));

  const Tensor centres = from_vector<float>({1, 0, 0, 1, 0.5f, 0.5f}, {3, 2});
  save_cluster_centres(RunDirectory(dir.string()), centres, 12);
  CHECK(load_cluster_centres(dir.string(), 12).to_vector<float>() == centres.to_vector<float>());
  CHECK_THROWS_WITH(load_cluster_centres(dir.string(), 18),
                    doctest::Contains("clusters the backbone after 12 training iterations but the checkpoint is after 18"));

  save_safetensors(path, {{"weights", centres}}, {{"iterations", "12"}});
  CHECK_THROWS_WITH(load_cluster_centres(dir.string(), 12), doctest::Contains("holds no 'centres' tensor [K, D]"));
  save_safetensors(path, {{"centres", from_vector<float>({1, 2}, {2})}}, {{"iterations", "12"}});
  CHECK_THROWS_WITH(load_cluster_centres(dir.string(), 12), doctest::Contains("holds no 'centres' tensor [K, D]"));
  save_safetensors(path, {{"centres", centres}}, {});
  CHECK_THROWS_WITH(load_cluster_centres(dir.string(), 12), doctest::Contains("has no 'iterations' entry"));
  fs::remove_all(dir);
}
