// Predictions of a trained SimGCD / SimGCD + MCDL model on image files (mcdl_predict): each
// image through the test transform, the backbone and the head; its cluster is the argmax of the
// logits, as the run's own evaluation predicts, and its probability the softmax of the logits at
// the training temperature (SimGCD's student temperature, 0.1) at that cluster.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "layers/simgcd_model.h"
#include "mcdl/features.h"

namespace mcdl {

struct ImagePrediction {
  int64_t cluster = 0;
  double probability = 0.0;
};

std::vector<ImagePrediction> predict_images(SimGCDModel& model, const std::vector<std::string>& paths,
                                            const FeatureOptions& options, double temperature = 0.1);

}  // namespace mcdl
