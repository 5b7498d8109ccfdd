#include <algorithm>

#include "data/datasets.h"
#include "data/datasets/fashion_mnist_idx.h"
#include "data/datasets/readers.h"
#include "engine/error.h"

namespace mcdl {

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"cub",         "scars",  "aircraft",     "herbarium19",
                                                 "cifar10",     "cifar100", "imagenet100", "imagenet1k", "fmnist",
                                                 "fmnist-pairs", "fmnist-pairs-pretrain", "folder"};
  return names;
}

Dataset load_dataset(const std::string& name, const std::string& root, const DatasetOptions& options) {
  using namespace dataset_io;
  check(options.max_train >= 0, "load_dataset: max_train ", options.max_train, " is negative");
  const bool from_fashion_mnist = name == "fmnist" || name == "fmnist-pairs" || name == "fmnist-pairs-pretrain";
  if (root.empty() && !from_fashion_mnist)
    fail("load_dataset: dataset '", name, "' needs its data root (only the Fashion-MNIST-based ones have a default)");
  const std::string fmnist_root = root.empty() ? kFashionMnistRoot : root;
  Dataset d;
  check(options.max_test >= 0, "load_dataset: max_test ", options.max_test, " is negative");
  const bool test = options.read_test;
  if (name == "cub") d = read_cub(root, test);
  else if (name == "scars") d = read_scars(root, test);
  else if (name == "aircraft") d = read_aircraft(root, test);
  else if (name == "herbarium19") d = read_herbarium19(root, test);
  else if (name == "cifar10") d = read_cifar(root, 10, test);
  else if (name == "cifar100") d = read_cifar(root, 100, test);
  else if (name == "imagenet100") d = read_imagenet100(root, test);
  else if (name == "imagenet1k") d = read_imagenet1k(root, test);
  else if (name == "fmnist") d = read_fashion_mnist(fmnist_root, test);
  else if (name == "fmnist-pairs") d = read_fmnist_pairs(fmnist_root, test);
  else if (name == "fmnist-pairs-pretrain") d = read_fmnist_pairs_pretrain(fmnist_root);
  else if (name == "folder") d = read_folder(root, options.num_classes, test);
  else {
    std::string known;
    for (const std::string& n : dataset_names()) known += " " + n;
    fail("load_dataset: unknown dataset '", name, "' (known:", known, ")");
  }
  if (options.max_train > 0 && options.max_train < d.size()) {
    d.train.resize(static_cast<size_t>(options.max_train));
    if (d.in_memory()) d.train_pixels.resize(static_cast<size_t>(options.max_train));
    std::erase_if(d.given_labelled, [&](int64_t i) { return i >= options.max_train; });
  }
  if (options.max_test > 0 && options.max_test < static_cast<int64_t>(d.test.size())) {
    // Evenly spaced, so that a test split ordered by class (CUB) keeps every class's share.
    const auto n = static_cast<int64_t>(d.test.size());
    std::vector<DatasetItem> items;
    std::vector<Image> pixels;
    for (int64_t k = 0; k < options.max_test; ++k) {
      const auto i = static_cast<size_t>(k * n / options.max_test);
      items.push_back(d.test[i]);
      if (!d.test_pixels.empty()) pixels.push_back(std::move(d.test_pixels[i]));
    }
    d.test = std::move(items);
    d.test_pixels = std::move(pixels);
  }
  return d;
}

}  // namespace mcdl
