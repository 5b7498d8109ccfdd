// Herbarium19 as the reference reads it: torchvision ImageFolder over small-train (class =
// position of the folder name in sorted order), Old / New classes from
// herbarium_19_class_splits.pkl (which refer to those positions). The test split: ImageFolder
// over small-validation, each folder taking the class of the same name in small-train (with all
// 683 folders there, exactly ImageFolder's own indices).
#include <filesystem>
#include <map>

#include "data/class_splits.h"
#include "data/datasets/common.h"
#include "data/datasets/readers.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

constexpr const char* kHowToObtain =
    "Herbarium19 expects ROOT/small-train/<category>/*.jpg: the pre-resized small-train archive of the "
    "Kaggle competition https://www.kaggle.com/c/herbarium-2019-fgvc6/data (see GCD issue #14); "
    "ROOT/small-validation/<category>/*.jpg, from the same page, is the test split.";
constexpr int64_t kClasses = 683;

}  // namespace

Dataset read_herbarium19(const std::string& root, bool with_test) {
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
  const std::string validation = (fs::path(root) / "small-validation").string();
  if (with_test && fs::is_directory(validation)) {
    std::map<std::string, int64_t> class_of;
    for (int64_t c = 0; c < kClasses; ++c) class_of[classes.names[static_cast<size_t>(c)]] = c;
    const FolderClasses test_classes = list_class_folders(validation);
    for (size_t f = 0; f < test_classes.names.size(); ++f) {
      const auto c = class_of.find(test_classes.names[f]);
      check(c != class_of.end(), "herbarium19: ", test_classes.paths[f], " is not one of small-train's categories");
      const std::vector<std::string> files = image_files_under(test_classes.paths[f]);
      check(!files.empty(), "herbarium19: class folder ", test_classes.paths[f], " has no images");
      for (const std::string& file : files) d.test.push_back({file, c->second});
    }
  }
  d.old_classes = herbarium19_old_classes();
  d.new_classes = herbarium19_new_classes();
  d.balanced_accuracy = true;
  d.subset_order = Dataset::SubsetOrder::ascending;  // herbarium_19.py subsamples with a boolean mask
  return d;
}

}  // namespace mcdl::dataset_io
