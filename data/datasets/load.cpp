#include <algorithm>

#include "data/datasets.h"
#include "data/datasets/readers.h"
#include "engine/error.h"

namespace mcdl {

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"cub",      "scars",    "aircraft",    "herbarium19", "cifar10",
                                                 "cifar100", "imagenet100", "fmnist",   "folder"};
  return names;
}

Dataset load_dataset(const std::string& name, const std::string& root, const DatasetOptions& options) {
  using namespace dataset_io;
  check(options.max_train >= 0, "load_dataset: max_train ", options.max_train, " is negative");
  if (root.empty() && name != "fmnist")
    fail("load_dataset: dataset '", name, "' needs its data root (only fmnist has a default)");
  Dataset d;
  if (name == "cub") d = read_cub(root);
  else if (name == "scars") d = read_scars(root);
  else if (name == "aircraft") d = read_aircraft(root);
  else if (name == "herbarium19") d = read_herbarium19(root);
  else if (name == "cifar10") d = read_cifar(root, 10);
  else if (name == "cifar100") d = read_cifar(root, 100);
  else if (name == "imagenet100") d = read_imagenet100(root);
  else if (name == "fmnist") d = read_fashion_mnist(root.empty() ? "/usr/share/datasets/fashion-mnist" : root);
  else if (name == "folder") d = read_folder(root, options.num_classes);
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
  return d;
}

}  // namespace mcdl
