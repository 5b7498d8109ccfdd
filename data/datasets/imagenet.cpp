// ImageNet's two GCD benchmarks, both ImageFolder over ROOT/train (the 1000 ILSVRC-2012 synset
// folders, sorted) with the test split from ROOT/val (the validation images sorted into synset
// folders), each class's images in ImageFolder order:
// - imagenet100, as get_imagenet_100_datasets builds it: the 100 classes np.random.seed(0);
//   np.random.choice(range(1000), 100, replace=False), sorted, relabelled 0..99 in that order;
//   old classes 0..49;
// - imagenet1k, as the references' imagenet_1k split: all 1000 classes with their folder index
//   as the label; old classes 0..499 (range(500)), new 500..999.
#include <algorithm>
#include <filesystem>
#include <numeric>

#include "data/datasets/common.h"
#include "data/datasets/readers.h"
#include "data/numpy_random.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

std::string how_to_obtain(const std::string& name) {
  return name + " expects ROOT/train/<synset>/*.JPEG with all 1000 ILSVRC-2012 synset folders (classes are " +
         "picked by index among them): get ILSVRC2012_img_train.tar from https://image-net.org/ (registration) and " +
         "extract each class tar into its synset folder; for the test split, sort ILSVRC2012_img_val.tar into " +
         "ROOT/val/<synset>/ the same way.";
}

// The images of the synsets `chosen` (indices among the 1000 sorted folders), relabelled 0.. in
// the order given; the first `num_old` classes are old.
Dataset read_imagenet_classes(const std::string& name, const std::string& root, bool with_test,
                              const std::vector<int64_t>& chosen, int64_t num_old) {
  const std::string train = (fs::path(root) / "train").string();
  require_dir(name, train, how_to_obtain(name));
  const FolderClasses classes = list_class_folders(train);
  check(classes.names.size() == 1000, name, ": ", train, " has ", classes.names.size(),
        " class folders, expected the 1000 ImageNet synsets.\n", how_to_obtain(name));
  const auto num_classes = static_cast<int64_t>(chosen.size());
  Dataset d;
  d.name = name;
  d.root = root;
  d.num_classes = num_classes;
  for (int64_t label = 0; label < num_classes; ++label) {
    const std::string& folder = classes.paths[static_cast<size_t>(chosen[static_cast<size_t>(label)])];
    const std::vector<std::string> files = image_files_under(folder);
    check(!files.empty(), name, ": class folder ", folder, " has no images");
    for (const std::string& file : files) d.train.push_back({file, label});
  }
  const fs::path val = fs::path(root) / "val";
  if (with_test && fs::is_directory(val)) {
    for (int64_t label = 0; label < num_classes; ++label) {
      const fs::path folder = val / classes.names[static_cast<size_t>(chosen[static_cast<size_t>(label)])];
      check(fs::is_directory(folder), name, ": no ", folder.string(),
            ": the validation images must be sorted into synset folders.\n", how_to_obtain(name));
      const std::vector<std::string> files = image_files_under(folder.string());
      check(!files.empty(), name, ": class folder ", folder.string(), " has no images");
      for (const std::string& file : files) d.test.push_back({file, label});
    }
  }
  d.old_classes = iota_classes(0, num_old);
  d.new_classes = iota_classes(num_old, num_classes);
  d.subset_order = Dataset::SubsetOrder::index_arrays;  // imagenet.py indexes with the arrays
  return d;
}

}  // namespace

Dataset read_imagenet100(const std::string& root, bool with_test) {
  std::vector<int64_t> chosen = numpy_legacy_choice_without_replacement(0, 1000, 100);
  std::sort(chosen.begin(), chosen.end());
  return read_imagenet_classes("imagenet100", root, with_test, chosen, 50);
}

Dataset read_imagenet1k(const std::string& root, bool with_test) {
  std::vector<int64_t> all(1000);
  std::iota(all.begin(), all.end(), 0);
  return read_imagenet_classes("imagenet1k", root, with_test, all, 500);
}

}  // namespace mcdl::dataset_io
