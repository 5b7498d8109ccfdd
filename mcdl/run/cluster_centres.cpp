#include "mcdl/run/cluster_centres.h"

#include <filesystem>
#include <map>

#include "engine/error.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace mcdl {

void save_cluster_centres(const RunDirectory& run, const Tensor& centres, int64_t iterations) {
  if (!run.writes()) return;
  save_safetensors(run.file(cluster_centres_file), {{"centres", centres.to(DType::f32)}},
                   {{"iterations", std::to_string(iterations)}});
}

Tensor load_cluster_centres(const std::string& run_dir, int64_t checkpoint_iterations) {
  const std::string path = (fs::path(run_dir) / cluster_centres_file).string();
  check(fs::exists(path), run_dir, " has no ", cluster_centres_file, ": this gcd / gcd+mcdl run predates the ",
        "keeping of its final k-means centres, which mcdl_predict needs; train it again");
  const SafetensorsFile file = load_safetensors(path);
  const auto centres = file.tensors.find("centres");
  check(centres != file.tensors.end() && centres->second.dim() == 2 && centres->second.size(0) >= 1, path,
        " holds no 'centres' tensor [K, D] (not written by mcdl_train)");
  // The centres cluster the features of one training state; a checkpoint of another (an older
  // epoch's copy, or a run that stopped inside its last epoch) would label with other features.
  const auto recorded = file.metadata.find("iterations");
  check(recorded != file.metadata.end(), path, " has no 'iterations' entry (not written by mcdl_train)");
  const std::string& iterations = recorded->second;
  check(iterations == std::to_string(checkpoint_iterations), path, " clusters the backbone after ", iterations,
        " training iterations but the checkpoint is after ", checkpoint_iterations,
        ": predict with checkpoints/last.safetensors of a run that finished its last epoch");
  return centres->second.to(DType::f32);
}

}  // namespace mcdl
