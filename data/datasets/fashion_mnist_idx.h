// Fashion-MNIST's idx files, shared by the readers built on them (fmnist, and fmnist-pairs,
// which composes its images from the garments).
#pragma once
#include <string>
#include <vector>

#include "data/dataset.h"

namespace mcdl::dataset_io {

// Where Debian's dataset-fashion-mnist package puts the files: every Fashion-MNIST-based
// dataset's default root.
inline constexpr const char* kFashionMnistRoot = "/usr/share/datasets/fashion-mnist";

// Which files the readers expect and where to get them (the end of every missing-file message).
const char* fashion_mnist_how_to_obtain();

// One split's idx pair, ROOT/<prefix>-images-idx3-ubyte(.gz) and ROOT/<prefix>-labels-idx1-ubyte(.gz)
// (prefix "train" or "t10k"): an item (class 0-9, no path) and its grayscale pixels per image, in
// file order. Checks the idx magic numbers, that the sizes match the headers, that both files
// hold as many entries and that every label is in 0..9; `dataset` names the reader in messages.
void read_fashion_mnist_idx(const std::string& dataset, const std::string& root, const std::string& prefix,
                            std::vector<DatasetItem>& items, std::vector<Image>& pixels);

}  // namespace mcdl::dataset_io
