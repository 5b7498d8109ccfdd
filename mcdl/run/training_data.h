// Everything a run reads before its first step: the dataset from its layout, the GCD split
// (labelled / unlabelled, remapped labels), and the decoded, resized images. Images that fail
// to decode stop the run with the list, or, with skip_bad_images, are dropped after the split
// is drawn (so the split itself never shifts). With --eval-on test or both, the same for the
// layout's test split.
#pragma once
#include <memory>
#include <vector>

#include "data/dataset.h"
#include "data/gcd_split.h"
#include "data/image_cache.h"
#include "data/transforms.h"
#include "mcdl/run/train_config.h"

namespace mcdl {

struct TrainingData {
  Dataset dataset;
  GcdSplit split;
  std::unique_ptr<ImageCache> cache;
  std::vector<int64_t> labelled;    // train indices of the labelled set (bad images dropped)
  // Train indices of the unlabelled pool; position = memory bank slot. With --val-classes the
  // validation images (labelled images held out, docs/training-and-evaluation.md §4) follow the
  // benchmark's unlabelled images, from position first_validation.
  std::vector<int64_t> unlabelled;
  size_t first_validation = 0;
  std::vector<int64_t> validation_classes;  // the known classes held out whole (remapped labels)
  Normalization normalization;
  // What the evaluation scores (--eval-on resolved: auto is both where the layout has a test
  // split, else unlabelled).
  EvalOn eval_on = EvalOn::unlabelled;
  // The test split when it is scored: its images as a dataset of their own (train = the test
  // items), their cache, and the indices into test_set.train kept (unreadable images dropped with
  // --skip-bad-images); their labels are split.test_label.
  Dataset test_set;
  std::unique_ptr<ImageCache> test_cache;
  std::vector<int64_t> test;

  int64_t num_classes() const { return split.num_classes; }
  int64_t num_old_classes() const { return split.num_old_classes; }
  int64_t label(int64_t train_index) const { return split.label[static_cast<size_t>(train_index)]; }
  // Per unlabelled-pool position: the benchmark's remapped label and whether it is an old class;
  // −1 (never scored) for the validation images.
  std::vector<int64_t> unlabelled_labels() const;
  std::vector<bool> unlabelled_is_old() const;
  // Per unlabelled-pool position: the label of a validation image (−1 elsewhere), and whether
  // its class kept labelled images ("validation old") or was held out whole ("validation new").
  bool has_validation() const { return first_validation < unlabelled.size(); }
  bool evaluates_unlabelled() const { return eval_on != EvalOn::test; }
  bool evaluates_test() const { return eval_on != EvalOn::unlabelled; }
  // Per position in `test`: the remapped label and whether it is an old class.
  std::vector<int64_t> test_labels() const;
  std::vector<bool> test_is_old() const;
  std::vector<int64_t> validation_labels() const;
  std::vector<bool> validation_is_old() const;
};

// Reads the dataset named by config.dataset (the message of a missing dataset says where to get
// it), draws the split and fills the image cache. Progress goes to stderr.
TrainingData load_training_data(const TrainConfig& config);

// --image-cache for `images` training images: whether each image is decoded when a batch reads it
// (off, or auto above kDecodeOnceMaxImages; auto's choice of off is said once on stderr).
bool decodes_on_access(const TrainConfig& config, int64_t images);

}  // namespace mcdl
