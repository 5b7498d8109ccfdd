// Dataset readers: each GCD dataset from its standard on-disk layout (the layouts the reference
// code reads; README lists them with download sources), in the reference's training-image order,
// with its old / new classes.
//
// Names: cub scars aircraft herbarium19 cifar10 cifar100 imagenet100 imagenet1k fmnist fmnist-pairs
// fmnist-pairs-pretrain folder (fmnist-pairs: a CUB-like benchmark composed from Fashion-MNIST,
// data/datasets/fmnist_pairs.h; -pretrain: the unlabelled images for its backbone).
// A missing folder or file fails with one message naming it and where to get the dataset;
// malformed content fails naming the file and line (or byte offset).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace mcdl {

struct DatasetOptions {
  // Keep only the first max_train training images in the reference order (file order for the
  // array datasets), e.g. a small Fashion-MNIST for a CPU demo; 0 keeps all. The GCD split is
  // then drawn over this subset. (For datasets ordered by class, such as CUB, the first images
  // cover only the first classes.)
  int64_t max_train = 0;
  // folder layout only: K, the number of known + novel classes. 0: the known class folders plus
  // the novel class names of unlabelled_labels.csv (required when there is no labels file).
  int64_t num_classes = 0;
  // Also read the layout's test split (Dataset::test), where it has one, e.g. for the inductive
  // evaluation; its listed image files must then all exist.
  bool read_test = false;
  // Keep max_test test images, evenly spaced over the split (0: all).
  int64_t max_test = 0;
};

const std::vector<std::string>& dataset_names();

// `root` empty: the dataset's default root (fmnist and fmnist-pairs*: /usr/share/datasets/fashion-mnist,
// where Debian's dataset-fashion-mnist package puts it); the others have none.
Dataset load_dataset(const std::string& name, const std::string& root, const DatasetOptions& options = {});

}  // namespace mcdl
