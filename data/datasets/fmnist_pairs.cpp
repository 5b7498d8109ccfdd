// The fmnist-pairs readers (data/datasets/fmnist_pairs.h): Fashion-MNIST's training idx files
// read as for fmnist, then the plan's canvases composed in memory. `fmnist-pairs` is the GCD
// benchmark (training split, and the test split when asked); `fmnist-pairs-pretrain` is the
// pretraining pool's images, whose labels no method reads, and has no test split.
#include <algorithm>
#include <filesystem>

#include "data/class_splits.h"
#include "data/datasets/common.h"
#include "data/datasets/fashion_mnist_idx.h"
#include "data/datasets/fmnist_pairs.h"
#include "data/datasets/readers.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

struct Garments {
  std::vector<Image> pixels;
  std::vector<int64_t> labels;
};

Garments read_garments(const std::string& dataset, const std::string& root) {
  require_dir(dataset, root, fashion_mnist_how_to_obtain());
  std::vector<DatasetItem> items;
  Garments garments;
  read_fashion_mnist_idx(dataset, root, "train", items, garments.pixels);
  check(!items.empty(), dataset, ": no images in ", (fs::path(root) / "train-images-idx3-ubyte").string(), "(.gz)");
  const Image& first = garments.pixels[0];
  check(first.height == fmnist_pairs::kGarmentSide && first.width == fmnist_pairs::kGarmentSide, dataset,
        ": the images in ", (fs::path(root) / "train-images-idx3-ubyte").string(), "(.gz) are ", first.height, "x",
        first.width, ", expected Fashion-MNIST's 28x28");
  for (const DatasetItem& item : items) garments.labels.push_back(item.class_id);
  return garments;
}

void compose_all(const std::vector<fmnist_pairs::PairImage>& pairs, const Garments& garments,
                 std::vector<DatasetItem>& items, std::vector<Image>& pixels) {
  items.reserve(pairs.size());
  pixels.reserve(pairs.size());
  for (const fmnist_pairs::PairImage& pair : pairs) {
    items.push_back({"", pair.class_id});
    pixels.push_back(fmnist_pairs::compose(garments.pixels[static_cast<size_t>(pair.upper.garment)],
                                           garments.pixels[static_cast<size_t>(pair.lower.garment)], pair));
  }
}

Dataset pairs_dataset(const std::string& name, const std::string& root) {
  Dataset d;
  d.name = name;
  d.root = root;
  d.num_classes = fmnist_pairs::kClasses;
  d.channels = 1;
  d.class_names = fmnist_pairs::class_names();
  d.old_classes = fmnist_pairs_old_classes();
  for (int64_t c = 0; c < fmnist_pairs::kClasses; ++c)
    if (std::find(d.old_classes.begin(), d.old_classes.end(), c) == d.old_classes.end()) d.new_classes.push_back(c);
  d.subset_order = Dataset::SubsetOrder::ascending;  // as CUB's, the training images ordered by class
  return d;
}

}  // namespace

Dataset read_fmnist_pairs(const std::string& root, bool with_test) {
  const Garments garments = read_garments("fmnist-pairs", root);
  const fmnist_pairs::Plan plan = fmnist_pairs::make_plan(garments.labels);
  Dataset d = pairs_dataset("fmnist-pairs", root);
  compose_all(plan.train, garments, d.train, d.train_pixels);
  if (with_test) compose_all(plan.test, garments, d.test, d.test_pixels);
  return d;
}

Dataset read_fmnist_pairs_pretrain(const std::string& root) {
  const Garments garments = read_garments("fmnist-pairs-pretrain", root);
  const fmnist_pairs::Plan plan = fmnist_pairs::make_plan(garments.labels);
  Dataset d = pairs_dataset("fmnist-pairs-pretrain", root);
  compose_all(plan.pretrain, garments, d.train, d.train_pixels);
  return d;
}

}  // namespace mcdl::dataset_io
