// FGVC-Aircraft (variant level) as the reference's FGVCAircraft(split='trainval') reads it:
// data/images_variant_trainval.txt lines "<image_id> <variant name>", class = position of the
// name in np.unique(names), image = data/images/<image_id>.jpg. The test split: the same from
// data/images_variant_test.txt (its 100 names sort as trainval's, so the classes agree).
#include <algorithm>
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
    "FGVC-Aircraft expects ROOT/data/images_variant_trainval.txt and ROOT/data/images/<id>.jpg, ROOT being "
    "the extracted fgvc-aircraft-2013b folder: download "
    "https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/archives/fgvc-aircraft-2013b.tar.gz";
constexpr int64_t kClasses = 100;

// The "<image_id> <variant name>" rows of a split's list.
std::vector<std::pair<std::string, std::string>> read_rows(const std::string& list) {
  std::vector<std::pair<std::string, std::string>> rows;  // image id, variant name
  for (const TextLine& line : read_text_lines(list)) {
    const size_t space = line.text.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 >= line.text.size())
      fail_line(list, line, "expected '<image_id> <variant name>'");
    rows.emplace_back(line.text.substr(0, space), line.text.substr(space + 1));
  }
  return rows;
}

}  // namespace

Dataset read_aircraft(const std::string& root, bool with_test) {
  const fs::path data = fs::path(root) / "data";
  const std::string list = (data / "images_variant_trainval.txt").string();
  require_file("aircraft", list, kHowToObtain);
  require_dir("aircraft", (data / "images").string(), kHowToObtain);

  const auto rows = read_rows(list);
  // The reference's names keep the line's '\n'; it is part of what np.unique sorts.
  std::map<std::string, int64_t> class_of;
  for (const auto& row : rows) class_of.emplace(row.second + "\n", 0);
  check(static_cast<int64_t>(class_of.size()) == kClasses, list, ": ", class_of.size(), " variant names, expected ",
        kClasses);
  int64_t next = 0;
  for (auto& entry : class_of) entry.second = next++;

  Dataset d;
  d.name = "aircraft";
  d.root = root;
  d.num_classes = kClasses;
  for (const auto& row : rows)
    d.train.push_back({(data / "images" / (row.first + ".jpg")).string(), class_of.at(row.second + "\n")});
  require_item_files("aircraft", d.train);
  const std::string test_list = (data / "images_variant_test.txt").string();
  if (with_test && fs::exists(test_list)) {
    for (const auto& [id, name] : read_rows(test_list)) {
      const auto c = class_of.find(name + "\n");
      check(c != class_of.end(), test_list, ": image ", id, " has the variant '", name, "', not one of the ", list,
            " names");
      d.test.push_back({(data / "images" / (id + ".jpg")).string(), c->second});
    }
    require_item_files("aircraft", d.test, "test");
  }
  const SsbClassSplit& split = ssb_class_split("aircraft");
  d.old_classes = split.known;
  d.new_classes = split.new_classes();
  d.subset_order = Dataset::SubsetOrder::ascending;  // fgvc_aircraft.py subsamples in index order
  return d;
}

}  // namespace mcdl::dataset_io
