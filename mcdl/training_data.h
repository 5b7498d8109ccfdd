// Everything a run reads before its first step: the dataset from its layout, the GCD split
// (labelled / unlabelled, remapped labels), and the decoded, resized images. Images that fail
// to decode stop the run with the list, or, with skip_bad_images, are dropped after the split
// is drawn (so the split itself never shifts).
#pragma once
#include <memory>
#include <vector>

#include "data/dataset.h"
#include "data/gcd_split.h"
#include "data/image_cache.h"
#include "data/transforms.h"
#include "mcdl/train_config.h"

namespace mcdl {

struct TrainingData {
  Dataset dataset;
  GcdSplit split;
  std::unique_ptr<ImageCache> cache;
  std::vector<int64_t> labelled;    // train indices of the labelled set (bad images dropped)
  std::vector<int64_t> unlabelled;  // train indices of the unlabelled set; position = memory bank slot
  Normalization normalization;

  int64_t num_classes() const { return split.num_classes; }
  int64_t num_old_classes() const { return split.num_old_classes; }
  int64_t label(int64_t train_index) const { return split.label[static_cast<size_t>(train_index)]; }
  // Remapped labels of the unlabelled set and whether each belongs to an old class.
  std::vector<int64_t> unlabelled_labels() const;
  std::vector<bool> unlabelled_is_old() const;
};

// Reads the dataset named by config.dataset (the message of a missing dataset says where to get
// it), draws the split and fills the image cache. Progress goes to stderr.
TrainingData load_training_data(const TrainConfig& config);

}  // namespace mcdl
