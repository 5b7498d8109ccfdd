// Stanford Cars as SimGCD's CarsDataset reads it: devkit/cars_train_annos.mat, the struct array
// `annotations` in file order, image = cars_train/<fname>, label = class - 1. (The reference
// takes fields 5 and 4 by position, which are fname and class in the devkit files.) The test split:
// devkit/cars_test_annos_withlabels.mat with images in cars_test/, read the same way.
#include <filesystem>

#include "data/class_splits.h"
#include "data/datasets/common.h"
#include "data/datasets/readers.h"
#include "data/mat_file.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

constexpr const char* kHowToObtain =
    "Stanford Cars expects ROOT/devkit/cars_train_annos.mat and ROOT/cars_train/*.jpg "
    "(ROOT/devkit/cars_test_annos_withlabels.mat and cars_test/ for the test split). The original "
    "site (ai.stanford.edu/~jkrause/cars) is gone; see https://github.com/pytorch/vision/issues/7545 "
    "for mirrors (e.g. the Kaggle copy) of car_devkit.tgz, cars_train.tgz, cars_test.tgz and "
    "cars_test_annos_withlabels.mat.";
constexpr int64_t kClasses = 196;

// The annotations of one split in file order: image = images/<fname>, label = class - 1.
std::vector<DatasetItem> read_annotations(const std::string& annos, const fs::path& images) {
  const MatArray annotations = read_mat_variable(annos, "annotations");
  check(annotations.kind == MatArray::Kind::structure, annos, ": 'annotations' is not a struct array");
  std::vector<DatasetItem> items;
  for (int64_t i = 0; i < annotations.numel(); ++i) {
    const MatArray& fname = annotations.field(i, "fname");
    const MatArray& label = annotations.field(i, "class");
    check(fname.kind == MatArray::Kind::text && !fname.text.empty(), annos, ": annotation ", i, " has no file name");
    check(label.kind == MatArray::Kind::numeric && label.numbers.size() == 1, annos, ": annotation ", i,
          " (", fname.text, ") has no class");
    const double target = label.numbers[0];
    check(target >= 1 && target <= kClasses && target == static_cast<double>(static_cast<int64_t>(target)), annos,
          ": annotation ", i, " (", fname.text, ") has class ", target, ", expected an integer in 1..", kClasses);
    items.push_back({(images / fname.text).string(), static_cast<int64_t>(target) - 1});
  }
  return items;
}

}  // namespace

Dataset read_scars(const std::string& root, bool with_test) {
  const std::string annos = (fs::path(root) / "devkit" / "cars_train_annos.mat").string();
  const fs::path images = fs::path(root) / "cars_train";
  require_file("scars", annos, kHowToObtain);
  require_dir("scars", images.string(), kHowToObtain);

  Dataset d;
  d.name = "scars";
  d.root = root;
  d.num_classes = kClasses;
  d.train = read_annotations(annos, images);
  const std::string test_annos = (fs::path(root) / "devkit" / "cars_test_annos_withlabels.mat").string();
  if (with_test && fs::exists(test_annos)) {
    require_dir("scars", (fs::path(root) / "cars_test").string(), kHowToObtain);
    d.test = read_annotations(test_annos, fs::path(root) / "cars_test");
    require_item_files("scars", d.test, "test");
  }
  require_item_files("scars", d.train);
  const SsbClassSplit& split = ssb_class_split("scars");
  d.old_classes = split.known;
  d.new_classes = split.new_classes();
  d.subset_order = Dataset::SubsetOrder::index_arrays;  // stanford_cars.py indexes with the arrays
  return d;
}

}  // namespace mcdl::dataset_io
