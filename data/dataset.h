// A GCD dataset as read from its on-disk layout: the training images in the reference
// implementation's order, their original class ids, and which classes are "old" (known).
//
// Readers (data/datasets/*.cpp) fill this; data/gcd_split.h turns it into the labelled and
// unlabelled sets. Images are either files (decoded on demand) or, for datasets stored as
// arrays (CIFAR, Fashion-MNIST), pixels held in memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/image.h"

namespace mcdl {

struct DatasetItem {
  std::string path;      // image file (absolute or relative to the working directory); empty when in memory
  int64_t class_id = 0;  // the dataset's own class index (0-based), before the GCD remapping;
                         // -1: unknown (folder layout, unlabelled image without a labels file)
};

struct Dataset {
  std::string name;          // "cub", "fmnist", ...
  std::string root;          // the data root it was read from
  int64_t num_classes = 0;   // K: old + new
  int64_t channels = 3;      // 3 (RGB) or 1 (grayscale; Fashion-MNIST)
  // Per class id, where the layout names its classes (the folder layout, Fashion-MNIST); empty
  // otherwise.
  std::vector<std::string> class_names;
  std::vector<DatasetItem> train;  // every training image, in the reference order
  // Pixels of train[i] when the dataset is stored as arrays (same indexing as train), else empty.
  std::vector<Image> train_pixels;
  // The layout's disjoint test split (all K classes, the reference's test order; class ids as in
  // train), for the inductive evaluation; empty when the layout has none or it was not asked for.
  std::vector<DatasetItem> test;
  std::vector<Image> test_pixels;  // as train_pixels, for test
  // Old (known) classes in the order that defines the remapping (remapped label = position),
  // then the new classes in their remapping order (Hard, Medium, Easy for the SSB datasets).
  std::vector<int64_t> old_classes;
  std::vector<int64_t> new_classes;
  bool balanced_accuracy = false;  // report v2b too (Herbarium19)
  // How the reference's subsample_dataset orders the labelled and unlabelled subsets
  // (data/gcd_split.h): with a boolean mask, i.e. ascending (CUB, Aircraft, Herbarium19), or
  // by indexing with the index arrays, i.e. draw order and Python set order (SCars, CIFAR,
  // ImageNet).
  enum class SubsetOrder { ascending, index_arrays };
  SubsetOrder subset_order = SubsetOrder::ascending;
  // Train indices that the layout itself marks as labelled (the folder layout). When non-empty
  // they are the labelled set and no subset is drawn.
  std::vector<int64_t> given_labelled;

  int64_t size() const { return static_cast<int64_t>(train.size()); }
  bool in_memory() const { return !train_pixels.empty(); }
  bool has_test() const { return !test.empty(); }
};

}  // namespace mcdl
