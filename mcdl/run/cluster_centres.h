// GCD's final semi-supervised k-means centres, kept in the run directory (centres.safetensors)
// so that mcdl_predict labels new images as the run's own inductive evaluation labels the test
// images: the nearest centre. A GCD run has no classifier; without its centres the clustering
// could not be repeated (ss-k-means needs the training images and their labels).
#pragma once
#include <cstdint>
#include <string>

#include "engine/tensor.h"
#include "mcdl/run/run_directory.h"

namespace mcdl {

inline constexpr const char* cluster_centres_file = "centres.safetensors";

// Writes the centres [K, D] atomically, recording `iterations`, the training iterations of the
// backbone whose features they cluster (what the checkpoint of that epoch records too).
void save_cluster_centres(const RunDirectory& run, const Tensor& centres, int64_t iterations);

// The centres (f32 [K, D], CPU) of the run in `run_dir`, which must be those of its checkpoint
// trained for `checkpoint_iterations`. A missing file (a run made before the centres were kept)
// or centres of another training state throws one message saying what to do.
Tensor load_cluster_centres(const std::string& run_dir, int64_t checkpoint_iterations);

}  // namespace mcdl
