// Backbone features of image files, for analysis outside the engine (mcdl_features): each image
// through the test transform (decode → shorter side to int(S/0.875), Pillow bicubic → center
// crop S → ToTensor + Normalize, as data/transforms.h) and the backbone, its CLS feature per row.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/tensor.h"
#include "layers/vision_transformer.h"

namespace mcdl {

// The file extensions a directory walk collects (lower case; matched case-insensitively).
const std::vector<std::string>& image_file_extensions();

// The images named by `inputs`, in order: a file is taken as given (any extension); a directory
// contributes its files with an image extension, walked recursively and sorted by path. A
// missing input, or a directory without images, throws naming it.
std::vector<std::string> list_image_files(const std::vector<std::string>& inputs);

// The test transform of one image file for a model with `channels` input channels:
// [channels, S, S] floats (normalised with Normalization::for_channels). A missing or corrupt
// file throws naming it.
std::vector<float> test_transform_file(const std::string& path, int64_t channels, int64_t image_size);

struct FeatureOptions {
  int64_t image_size = 224;  // S
  int64_t batch_size = 64;
  bool normalise = true;     // L2-normalise each row (F.normalize), as GCD's k-means features
  // Called after each batch with the number of images done so far.
  std::function<void(int64_t done)> on_batch;
};

// The CLS features [N, D] (f32, CPU) of the images, row i for paths[i], computed on the device
// the backbone is on, without recording a graph. The next batch is decoded on a second thread
// while the backbone runs.
Tensor extract_features(VisionTransformer& backbone, const std::vector<std::string>& paths,
                        const FeatureOptions& options);

// A backbone weights file (layers/backbone_file.h). `config_spec` (parse_model_config), when
// not empty, declares the model instead of the file's metadata, so a file without one loads too.
VisionTransformer load_backbone_weights(const std::string& path, const std::string& config_spec = "");

}  // namespace mcdl
