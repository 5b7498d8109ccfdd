// Herbarium19 as the reference reads it: torchvision ImageFolder over small-train (class =
// position of the folder name in sorted order), Old / New classes from
// herbarium_19_class_splits.pkl (which refer to those positions).
#include <filesystem>

#include "data/class_splits.h"
#include "data/datasets/common.h"
#include "data/datasets/readers.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

constexpr const char* kHowToObtain =
    "Herbarium19 expects ROOT/small-train/<category>/*.jpg: the pre-resized small-train archive of the "
    "Kaggle competition https://www.kaggle.com/c/herbarium-2019-fgvc6/data (see GCD issue #14).";
constexpr int64_t kClasses = 683;

}  // namespace

Dataset read_herbarium19(const std::string& root) {
  const std::string train = (fs::path(root) / "small-train").string();
  require_dir("herbarium19", train, kHowToObtain);
  const FolderClasses classes = list_class_folders(train);
  check(static_cast<int64_t>(classes.names.size()) == kClasses, "herbarium19: ", train, " has ", classes.names.size(),
        " class folders, expected ", kClasses, ".\n", kHowToObtain);
  Dataset d;
  d.name = "herbarium19";
  d.root = root;
  d.num_classes = kClasses;
  for (int64_t c = 0; c < kClasses; ++c) {
    const std::vector<std::string> files = image_files_under(classes.paths[static_cast<size_t>(c)]);
    check(!files.empty(), "herbarium19: class folder ", classes.paths[static_cast<size_t>(c)], " has no images");
    for (const std::string& file : files) d.train.push_back({file, c});
  }
  d.old_classes = herbarium19_old_classes();
  d.new_classes = herbarium19_new_classes();
  d.balanced_accuracy = true;
  d.subset_order = Dataset::SubsetOrder::ascending;  // herbarium_19.py subsamples with a boolean mask
  return d;
}

}  // namespace mcdl::dataset_io
