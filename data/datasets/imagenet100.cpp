// ImageNet-100 as get_imagenet_100_datasets builds it: ImageFolder over ROOT/train (1000
// synset folders, sorted), the 100 classes np.random.seed(0); np.random.choice(range(1000),
// 100, replace=False), sorted; their images in ImageFolder order, relabelled 0..99 in sorted
// order; old classes 0..49. The test split: ImageFolder over ROOT/val (the validation images
// sorted into synset folders), the images of the same 100 synsets in ImageFolder order.
#include <algorithm>
#include <filesystem>

#include "data/datasets/common.h"
#include "data/datasets/readers.h"
#include "data/numpy_random.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

constexpr const char* kHowToObtain =
    "ImageNet-100 expects ROOT/train/<synset>/*.JPEG with all 1000 ILSVRC-2012 synset folders (the 100 "
    "classes are picked by index among them): get ILSVRC2012_img_train.tar from https://image-net.org/ "
    "(registration) and extract each class tar into its synset folder; for the test split, sort "
    "ILSVRC2012_img_val.tar into ROOT/val/<synset>/ the same way.";

}  // namespace

Dataset read_imagenet100(const std::string& root, bool with_test) {
  const std::string train = (fs::path(root) / "train").string();
  require_dir("imagenet100", train, kHowToObtain);
  const FolderClasses classes = list_class_folders(train);
  check(classes.names.size() == 1000, "imagenet100: ", train, " has ", classes.names.size(),
        " class folders, expected the 1000 ImageNet synsets.\n", kHowToObtain);
  std::vector<int64_t> chosen = numpy_legacy_choice_without_replacement(0, 1000, 100);
  std::sort(chosen.begin(), chosen.end());

  Dataset d;
  d.name = "imagenet100";
  d.root = root;
  d.num_classes = 100;
  for (int64_t label = 0; label < 100; ++label) {
    const std::string& folder = classes.paths[static_cast<size_t>(chosen[static_cast<size_t>(label)])];
    const std::vector<std::string> files = image_files_under(folder);
    check(!files.empty(), "imagenet100: class folder ", folder, " has no images");
    for (const std::string& file : files) d.train.push_back({file, label});
  }
  const fs::path val = fs::path(root) / "val";
  if (with_test && fs::is_directory(val)) {
    for (int64_t label = 0; label < 100; ++label) {
      const fs::path folder = val / classes.names[static_cast<size_t>(chosen[static_cast<size_t>(label)])];
      check(fs::is_directory(folder), "imagenet100: no ", folder.string(),
            ": the validation images must be sorted into synset folders.\n", kHowToObtain);
      const std::vector<std::string> files = image_files_under(folder.string());
      check(!files.empty(), "imagenet100: class folder ", folder.string(), " has no images");
      for (const std::string& file : files) d.test.push_back({file, label});
    }
  }
  d.old_classes = iota_classes(0, 50);
  d.new_classes = iota_classes(50, 100);
  d.subset_order = Dataset::SubsetOrder::index_arrays;  // imagenet.py indexes with the arrays
  return d;
}

}  // namespace mcdl::dataset_io
