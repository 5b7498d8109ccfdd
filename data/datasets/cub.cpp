// CUB-200-2011 as CustomCub2011 reads it: images.txt, image_class_labels.txt and
// train_test_split.txt merged on img_id (pandas inner merge: images.txt order), the rows with
// is_training_img == 1, label = target - 1, images under CUB_200_2011/images/. The rows with
// is_training_img == 0 are the test split (CustomCub2011(train=False)).
#include <filesystem>
#include <unordered_map>

#include "data/class_splits.h"
#include "data/datasets/common.h"
#include "data/datasets/readers.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

constexpr const char* kHowToObtain =
    "CUB expects ROOT/CUB_200_2011/{images.txt,image_class_labels.txt,train_test_split.txt,images/}: "
    "download CUB_200_2011.tgz from https://www.vision.caltech.edu/datasets/cub_200_2011/ "
    "(https://data.caltech.edu/records/65de6-vjr04) and extract it into ROOT.";
constexpr int64_t kClasses = 200;

// "<img_id> <value>" lines as a map; duplicate ids are an error.
std::unordered_map<int64_t, std::string> id_table(const std::string& path) {
  std::unordered_map<int64_t, std::string> table;
  for (const TextLine& line : read_text_lines(path)) {
    const size_t space = line.text.find(' ');
    if (space == std::string::npos || space + 1 >= line.text.size())
      fail_line(path, line, "expected '<img_id> <value>'");
    const int64_t id = parse_index(line.text.substr(0, space), path, line);
    if (!table.emplace(id, line.text.substr(space + 1)).second) fail_line(path, line, "repeated img_id");
  }
  return table;
}

}  // namespace

Dataset read_cub(const std::string& root, bool with_test) {
  const fs::path base = fs::path(root) / "CUB_200_2011";
  const std::string images_txt = (base / "images.txt").string();
  const std::string labels_txt = (base / "image_class_labels.txt").string();
  const std::string split_txt = (base / "train_test_split.txt").string();
  require_dir("cub", base.string(), kHowToObtain);
  for (const std::string& file : {images_txt, labels_txt, split_txt}) require_file("cub", file, kHowToObtain);
  require_dir("cub", (base / "images").string(), kHowToObtain);

  const auto labels = id_table(labels_txt);
  const auto is_train = id_table(split_txt);
  Dataset d;
  d.name = "cub";
  d.root = root;
  d.num_classes = kClasses;
  for (const TextLine& line : read_text_lines(images_txt)) {
    const size_t space = line.text.find(' ');
    if (space == std::string::npos || space + 1 >= line.text.size())
      fail_line(images_txt, line, "expected '<img_id> <filepath>'");
    const int64_t id = parse_index(line.text.substr(0, space), images_txt, line);
    const auto label = labels.find(id);
    const auto train = is_train.find(id);
    if (label == labels.end()) fail_line(images_txt, line, "img_id missing from image_class_labels.txt");
    if (train == is_train.end()) fail_line(images_txt, line, "img_id missing from train_test_split.txt");
    if (train->second != "0" && train->second != "1")
      fail(split_txt, ": is_training_img of img_id ", id, " is '", train->second, "', expected 0 or 1");
    if (train->second != "1" && !with_test) continue;
    const TextLine label_line{0, std::to_string(id) + " " + label->second};
    const int64_t target = parse_index(label->second, labels_txt, label_line);
    if (target < 1 || target > kClasses)
      fail(labels_txt, ": class ", target, " of img_id ", id, " outside 1..", kClasses);
    (train->second == "1" ? d.train : d.test).push_back({(base / "images" / line.text.substr(space + 1)).string(), target - 1});
  }
  require_item_files("cub", d.train);
  require_item_files("cub", d.test, "test");
  const SsbClassSplit& split = ssb_class_split("cub");
  d.old_classes = split.known;
  d.new_classes = split.new_classes();
  d.subset_order = Dataset::SubsetOrder::ascending;  // cub.py subsamples with a boolean mask
  return d;
}

}  // namespace mcdl::dataset_io
