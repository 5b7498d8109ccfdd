// Predictions of a trained run on image files (mcdl_predict), each image through the test
// transform and the backbone, as the run's own evaluation predicts:
// - SimGCD / SimGCD + MCDL: the head's logits; the cluster is their argmax, the probability the
//   softmax of the logits at the training temperature (SimGCD's student temperature, 0.1) at it.
// - GCD / GCD + MCDL: the L2-normalised CLS feature x and the run's final k-means centres c_k;
//   the cluster is the nearest centre (Euclidean, as the k-means assigns and as the inductive
//   evaluation labels test images), the probability softmax_k(cos(x, c_k) / 0.1) at it (the
//   temperature of SimGCD's classifier and of GCD + MCDL's k-means classifier). The centres are
//   means of unit vectors, of unequal norms, so the nearest is usually, not always, the most
//   similar in cosine: the probability at the cluster is then not the largest.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "layers/simgcd_model.h"
#include "layers/vision_transformer.h"
#include "mcdl/evaluation/features.h"

namespace mcdl {

struct ImagePrediction {
  int64_t cluster = 0;
  double probability = 0.0;
};

std::vector<ImagePrediction> predict_images(SimGCDModel& model, const std::vector<std::string>& paths,
                                            const FeatureOptions& options, double temperature = 0.1);

// centres: [K, D] (any device; mcdl/run/cluster_centres.h), D the backbone's embedding width.
std::vector<ImagePrediction> predict_images_by_centres(VisionTransformer& backbone, const Tensor& centres,
                                                       const std::vector<std::string>& paths,
                                                       const FeatureOptions& options, double temperature = 0.1);

}  // namespace mcdl
